package cli_test

import (
	"strings"
	"testing"
)

// TestCommandLineManners: a typo suggests the nearest command, a missing argument says
// the usage line (not the server's "see orcr api schema"), an extra argument is refused,
// and none of them dials the server.
func TestCommandLineManners(t *testing.T) {
	r := newRig(t)
	for _, c := range []struct{ args, want string }{
		{"agent lss", `orcr: unknown command "lss" for "orcr agent"; did you mean ls?`},
		{"agent stauts", `see ` + "`orcr agent --help`"},
		{"sreve", `orcr: unknown command "sreve" for "orcr"; did you mean serve?`},
		{"plan shwo x", `did you mean show?`},
		{"queue capz", `did you mean caps?`},
		{"agent get", "orcr: missing ID|PATH; usage: orcr agent get ID|PATH"},
		{"agent send", "orcr: missing TARGET; usage: orcr agent send TARGET TEXT"},
		{"plan new x", `orcr: missing request; usage: orcr plan new NAME "request"`},
		{"agent get a b", `orcr: unexpected argument "b"; usage: orcr agent get ID|PATH`},
		{"agent ls a b c", `orcr: unexpected arguments "b" "c"; usage: orcr agent ls`},
		{"usage x", `orcr: unexpected argument "x"; usage: orcr usage`},
		{"run status a b", `unexpected argument "b"; usage: orcr run status [NAME]`},
		{"mcp --scope all", `orcr: --scope "all": use self, read, act`},
	} {
		before := r.dials.Load()
		code, out, errOut := r.run(t, "", strings.Fields(c.args)...)
		if code == 0 || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "api schema") || out != "" {
			t.Errorf("orcr %s: exit %d, stdout %q, stderr %q; want %q", c.args, code, out, errOut, c.want)
		}
		if strings.Count(errOut, "\n") != 1 {
			t.Errorf("orcr %s: want one line, got %q", c.args, errOut)
		}
		if r.dials.Load() != before {
			t.Errorf("orcr %s dialled the server for a usage error", c.args)
		}
	}
	// What stays allowed: a group alone shows its help, send with only --keys, a run's
	// coder argv after NAME.
	if code, out, errOut := r.run(t, "", "agent"); code != 0 || !strings.Contains(out, "orcr agent") {
		t.Errorf("orcr agent: exit %d, %q %q", code, out, errOut)
	}
}
