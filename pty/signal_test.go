package pty_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"orcr/pty"
)

// TestCtrlCWhenServerIgnoresSigint runs a host inside a copy of this test binary
// started with SIGINT ignored (as `nohup` or `cmd &` in a script do): ctrl-c must
// still interrupt the pane's program.
func TestCtrlCWhenServerIgnoresSigint(t *testing.T) {
	if os.Getenv("ORCR_PTY_SIGINT_CHILD") == "1" {
		ctrlCChild(t)
		return
	}
	cmd := exec.Command("sh", "-c", `trap '' INT; exec "$0" -test.run='^TestCtrlCWhenServerIgnoresSigint$' -test.v`, os.Args[0])
	cmd.Env = append(os.Environ(), "ORCR_PTY_SIGINT_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("child with SIGINT ignored: %v\n%s", err, out)
	}
}

func ctrlCChild(t *testing.T) {
	h := newHost(t, pty.Options{})
	info := launch(t, h, "sh", "-c", `echo sleeping; exec sleep 60`)
	waitText(t, h, info.ID, 0, "sleeping")
	if err := h.SendKeys(context.Background(), info.ID, "ctrl-c"); err != nil {
		t.Fatal(err)
	}
	if code := nextExit(t, h, info.ID); code != 130 {
		t.Fatalf("exit %d after ctrl-c, want 130", code)
	}
}
