package pty_test

import (
	"context"
	"testing"

	"orcr/core"
	"orcr/pty"
)

// TestPaste: a program that asked for bracketed paste gets the text between the
// paste markers (an end marker inside the text dropped); one that did not gets it
// typed.
func TestPaste(t *testing.T) {
	h := newHost(t, pty.Options{})
	var _ core.Paster = h
	ctx := context.Background()
	on := launch(t, h, "sh", "-c", `printf '\033[?2004h'; echo READY; stty -echo; exec cat -v`)
	waitText(t, h, on.ID, 0, "READY")
	if err := h.Paste(ctx, on.ID, "a b\x1b[201~c"); err != nil {
		t.Fatal(err)
	}
	h.SendKeys(ctx, on.ID, "enter")
	waitText(t, h, on.ID, 0, "^[[200~a bc^[[201~")

	off := launch(t, h, "sh", "-c", `echo READY; stty -echo; exec cat -v`)
	waitText(t, h, off.ID, 0, "READY")
	if err := h.Paste(ctx, off.ID, "plain text"); err != nil {
		t.Fatal(err)
	}
	h.SendKeys(ctx, off.ID, "enter")
	s := waitText(t, h, off.ID, 0, "plain text")
	if want := "READY\nplain text"; s.Text[:len(want)] != want {
		t.Fatalf("unbracketed paste shows %q", s.Text)
	}
}
