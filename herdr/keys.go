package herdr

import (
	"context"
	"fmt"
	"strings"
)

// rawKeys are orcr key names herdr's key grammar lacks ("no home/end/pageup/delete
// names", reference §2.6); they are typed as the xterm sequences instead.
var rawKeys = map[string]string{
	"home": "\x1b[H",
	"end":  "\x1b[F",
	"pgup": "\x1b[5~",
	"pgdn": "\x1b[6~",
}

// herdrKey maps an orcr key name (core.Host.SendKeys) to herdr's key grammar.
func herdrKey(k string) (string, bool) {
	switch k {
	case "enter", "esc", "tab", "backspace", "up", "down", "left", "right", "space":
		return k, true
	}
	if c, ok := strings.CutPrefix(k, "ctrl-"); ok && len(c) == 1 && c[0] >= 'a' && c[0] <= 'z' {
		return "ctrl+" + c, true
	}
	if n, ok := strings.CutPrefix(k, "f"); ok {
		switch n {
		case "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12":
			return k, true
		}
	}
	return "", false
}

// SendKeys presses orcr-named keys: runs of keys herdr knows go in one
// pane.send_keys, the rest as raw sequences through pane.send_text, in order. Every
// name is checked before anything is sent.
func (h *Host) SendKeys(ctx context.Context, pane string, keys ...string) error {
	type step struct {
		keys []string
		raw  string
	}
	var steps []step
	for _, k := range keys {
		if hk, ok := herdrKey(k); ok {
			if n := len(steps); n > 0 && steps[n-1].keys != nil {
				steps[n-1].keys = append(steps[n-1].keys, hk)
			} else {
				steps = append(steps, step{keys: []string{hk}})
			}
			continue
		}
		raw, ok := rawKeys[k]
		if !ok {
			return fmt.Errorf("herdr send keys: unknown key %q (known: enter, esc, tab, backspace, up, down, left, right, home, end, pgup, pgdn, space, ctrl-a…ctrl-z, f1…f12)", k)
		}
		steps = append(steps, step{raw: raw})
	}
	for _, s := range steps {
		var err error
		if s.keys != nil {
			err = h.c.call(ctx, "pane.send_keys", map[string]any{"pane_id": pane, "keys": s.keys}, nil)
		} else {
			err = h.c.call(ctx, "pane.send_text", map[string]any{"pane_id": pane, "text": s.raw}, nil)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
