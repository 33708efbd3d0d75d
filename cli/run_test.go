package cli_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"orcr/cli"
	"orcr/core/wire"
)

// TestRunHelpSaysEachDefaultOnce: every `orcr run` command's help gives a flag's
// default once. `run start --help` said "--coders … (default 2; shared mode 1)
// (default: 0)" and "--check-timeout … (default 10m) (default: 0s)".
func TestRunHelpSaysEachDefaultOnce(t *testing.T) {
	for _, sub := range []string{"start", "status", "hold", "retry", "finish", "dispatch"} {
		var out, errb bytes.Buffer
		o := cli.Options{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
			Connect: func(context.Context) (wire.Transport, error) { t.Fatal("help dialled the server"); return nil, nil }}
		if code := cli.Run(context.Background(), []string{"orcr", "run", sub, "--help"}, o); code != 0 {
			t.Fatalf("run %s --help: exit %d %s", sub, code, errb.String())
		}
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.Count(l, "(default") > 1 {
				t.Errorf("run %s --help says a default twice: %q", sub, strings.TrimSpace(l))
			}
		}
	}
}
