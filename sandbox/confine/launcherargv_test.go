package confine

import (
	"slices"
	"testing"
)

// The launcher's command line the sandbox builds is the one the tmux host's spare
// recognises, and nothing else is taken for one.
func TestLauncherArgvRoundTrip(t *testing.T) {
	argv := LauncherArgv("/usr/bin/orcr", "/h/agents/x/policy.json", []string{"sh", "-c", "echo hi"})
	self, policy, cmd, ok := ParseLauncherArgv(argv)
	if !ok || self != "/usr/bin/orcr" || policy != "/h/agents/x/policy.json" || !slices.Equal(cmd, []string{"sh", "-c", "echo hi"}) {
		t.Fatalf("parsed %q %q %q %v from %q", self, policy, cmd, ok, argv)
	}
	for _, bad := range [][]string{
		{"sh", "-c", "true"},
		LauncherArgv("orcr", "/p", []string{"true"}), // not an absolute binary
		LauncherArgv("/usr/bin/orcr", "/p", nil),     // nothing to exec
		{"/usr/bin/orcr", "sandbox", "exec", "--await", "/s", "--", "true"},
	} {
		if _, _, _, ok := ParseLauncherArgv(bad); ok {
			t.Errorf("%q taken for a launcher", bad)
		}
	}
}
