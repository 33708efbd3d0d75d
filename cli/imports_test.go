package cli_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCLIIsAThinClient fails when package cli comes to depend, directly or through
// another package, on the store, a host or a provider adapter (or on the daemon that
// wires them): the command line reaches all of that only through a wire.Transport.
func TestCLIIsAThinClient(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "orcr/cli").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps orcr/cli: %v\n%s", err, out)
	}
	forbidden := []string{"orcr/store", "orcr/tmux", "orcr/pty", "orcr/herdr", "orcr/adapters", "orcr/daemon", "orcr/testutil",
		"github.com/dgraph-io/badger"}
	var deps int
	for _, dep := range strings.Fields(string(out)) {
		deps++
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("orcr/cli depends on %s", dep)
			}
		}
	}
	if deps < 10 || !strings.Contains(string(out), "orcr/core/socket\n") {
		t.Fatalf("go list -deps orcr/cli gave an implausible list:\n%s", out)
	}
}
