package pty_test

import (
	"context"
	"orcr/testutil/clis"
	"strings"
	"testing"

	"orcr/core"
	"orcr/pty"
)

// TestFullScreenTUI runs vim, a real full-screen program that queries the terminal and
// uses the alternate screen: it must draw, take keys, and give the main screen back.
func TestFullScreenTUI(t *testing.T) {
	// scripts/test installs vim, so it always runs there; a developer without vim is told
	// how to get it.
	vim := clis.Program(t, "vim", "apt-get install vim")
	h := newHost(t, pty.Options{})
	info, err := h.Launch(context.Background(), core.LaunchSpec{
		Argv: []string{"sh", "-c", `echo main-screen-text; "$0" -u NONE -N -i NONE -n; echo vim-exit=$?; exec cat`, vim},
		Env:  env("HOME=" + t.TempDir()),
		Cwd:  t.TempDir(),
		Cols: 100, Rows: 30,
	})
	if err != nil {
		t.Fatal(err)
	}
	s := waitText(t, h, info.ID, 0, "~")
	if strings.Contains(s.Text, "main-screen-text") {
		t.Errorf("vim's alternate screen shows the main screen:\n%s", s.Text)
	}
	if err := h.SendText(context.Background(), info.ID, "ihello from the host"); err != nil {
		t.Fatal(err)
	}
	if err := h.SendKeys(context.Background(), info.ID, "esc"); err != nil {
		t.Fatal(err)
	}
	s = waitText(t, h, info.ID, 0, "hello from the host")
	if s.CursorY != 0 || s.Rows != 30 || s.Cols != 100 {
		t.Errorf("cursor %d,%d on a %dx%d screen; want row 0 of 100x30", s.CursorX, s.CursorY, s.Cols, s.Rows)
	}
	if err := h.Resize(context.Background(), info.ID, 80, 20); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "vim to redraw at 80x20", func() (bool, string) {
		s, _ := h.Read(context.Background(), info.ID, core.ReadOpts{})
		lines := strings.Split(s.Text, "\n")
		return s.Rows == 20 && len(lines) <= 20 && strings.Contains(s.Text, "hello from the host"), s.Text
	})
	if err := h.SendText(context.Background(), info.ID, ":q!"); err != nil {
		t.Fatal(err)
	}
	if err := h.SendKeys(context.Background(), info.ID, "enter"); err != nil {
		t.Fatal(err)
	}
	s = waitText(t, h, info.ID, 0, "vim-exit=0")
	if !strings.Contains(s.Text, "main-screen-text") || strings.Contains(s.Text, "hello from the host") {
		t.Errorf("main screen not restored after vim:\n%s", s.Text)
	}
}
