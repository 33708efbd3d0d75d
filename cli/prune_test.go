package cli_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"orcr/cli"
	"orcr/core/wire"
)

// TestLeafCommandSetsUpOnlyItsPath counts what one `orcr agent get X` costs the
// command line before it reaches the server: urfave/cli set up the whole tree (help,
// categories, flag checks for every command) on each run, which a leaf never needs.
func TestLeafCommandSetsUpOnlyItsPath(t *testing.T) {
	refused := errors.New("no server in this test")
	o := cli.Options{Stdin: eofReader{}, Stdout: io.Discard, Stderr: io.Discard,
		Connect: func(context.Context) (wire.Transport, error) { return nil, refused }}
	allocs := testing.AllocsPerRun(20, func() {
		if code := cli.Run(context.Background(), []string{"orcr", "agent", "get", "x"}, o); code != cli.ExitError {
			t.Fatalf("exit %d, want %d", code, cli.ExitError)
		}
	})
	// The whole tree's set-up was 4,179 allocations; the leaf's path alone is under 900.
	if allocs > 1500 {
		t.Errorf("orcr agent get makes %.0f allocations in the command line; want under 1,500 (only its path of the command tree set up)", allocs)
	}
	// The leaf's help still says what the leaf is.
	var help strings.Builder
	o.Stdout = &help
	if code := cli.Run(context.Background(), []string{"orcr", "agent", "get", "--help"}, o); code != cli.ExitOK {
		t.Fatalf("orcr agent get --help: exit %d", code)
	}
	if !strings.Contains(help.String(), "orcr agent get [options] ID|PATH") {
		t.Errorf("orcr agent get --help printed:\n%s", help.String())
	}
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }
