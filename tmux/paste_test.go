package tmux

import (
	"context"
	"strings"
	"testing"

	"orcr/core"
)

// TestPaste: a program that asked for bracketed paste gets the text between the
// paste markers (an end marker inside the text dropped); one that did not gets it
// typed, line feeds kept.
func TestPaste(t *testing.T) {
	h := newTestHost(t, testSocket(t))
	defer h.Shutdown(context.Background())
	var _ core.Paster = h
	on := launch(t, h, "sh", "-c", `printf '\033[?2004h'; echo READY; stty -echo; exec cat -v`)
	waitText(t, h, on.ID, "READY")
	if err := h.Paste(ctxT(t), on.ID, "a \"$b\"\x1b[201~c"); err != nil {
		t.Fatal(err)
	}
	h.SendKeys(ctxT(t), on.ID, "enter")
	waitText(t, h, on.ID, `^[[200~a "$b"c^[[201~`)

	off := launch(t, h, "sh", "-c", `echo READY; stty -echo; exec cat -v`)
	waitText(t, h, off.ID, "READY")
	if err := h.Paste(ctxT(t), off.ID, "one\ntwo"); err != nil {
		t.Fatal(err)
	}
	h.SendKeys(ctxT(t), off.ID, "enter")
	s := waitText(t, h, off.ID, "two")
	if !strings.HasPrefix(s.Text, "READY\none\ntwo") {
		t.Fatalf("unbracketed paste shows %q", s.Text)
	}
}
