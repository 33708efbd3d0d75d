package ui

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// TestAttachHint: attaching to orcr's tmux prints one line naming the agent and the
// way back first — the prefix twice when the dashboard runs inside the user's own
// tmux — and then runs the attach; the embedded host's own attach prints its own.
func TestAttachHint(t *testing.T) {
	argv := []string{"/usr/bin/tmux", "-S", "/h/tmux.sock", "attach", "-t", "%3"}
	if h := attachHint("demo/a", argv, false); h != "orcr: attaching to demo/a — detach with C-b d (tmux prefix, then d)" {
		t.Errorf("hint %q", h)
	}
	if h := attachHint("demo/a", argv, true); !strings.Contains(h, "C-b C-b d") {
		t.Errorf("hint inside tmux %q", h)
	}
	if h := attachHint("demo/a", nil, false); h != "" {
		t.Errorf("stream attach hint %q", h)
	}
	var out bytes.Buffer
	c := &hintedCmd{Cmd: exec.Command("sh", "-c", "echo attached"), hint: attachHint("demo/a", argv, false)}
	c.SetStdout(&out)
	c.SetStderr(&out)
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "orcr: attaching to demo/a — detach with C-b d (tmux prefix, then d)\r\nattached\n" {
		t.Fatalf("terminal got %q", got)
	}
}
