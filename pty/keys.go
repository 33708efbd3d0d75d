package pty

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// keyTable maps key names to the bytes a terminal in normal (not application) cursor
// mode sends for them. It is the one table of named keys; KeyBytes and KeyNames read it.
// It is built on first use, not at init: every orcr process links this package.
var keyTable = sync.OnceValue(func() map[string]string {
	m := map[string]string{
		"enter":     "\r",
		"esc":       "\x1b",
		"tab":       "\t",
		"shift-tab": "\x1b[Z",
		"backspace": "\x7f",
		"space":     " ",
		"up":        "\x1b[A",
		"down":      "\x1b[B",
		"right":     "\x1b[C",
		"left":      "\x1b[D",
		"home":      "\x1b[H",
		"end":       "\x1b[F",
		"pgup":      "\x1b[5~",
		"pgdn":      "\x1b[6~",
		"insert":    "\x1b[2~",
		"delete":    "\x1b[3~",
		"ctrl-]":    "\x1d",
		"ctrl-\\":   "\x1c",
		"f1":        "\x1bOP",
		"f2":        "\x1bOQ",
		"f3":        "\x1bOR",
		"f4":        "\x1bOS",
		"f5":        "\x1b[15~",
		"f6":        "\x1b[17~",
		"f7":        "\x1b[18~",
		"f8":        "\x1b[19~",
		"f9":        "\x1b[20~",
		"f10":       "\x1b[21~",
		"f11":       "\x1b[23~",
		"f12":       "\x1b[24~",
	}
	for c := 'a'; c <= 'z'; c++ {
		m["ctrl-"+string(c)] = string(rune(c - 'a' + 1))
	}
	return m
})

// keyAliases are other spellings people type for the same keys.
var keyAliases = map[string]string{
	"return":   "enter",
	"escape":   "esc",
	"bspace":   "backspace",
	"pageup":   "pgup",
	"pagedown": "pgdn",
	"del":      "delete",
	"btab":     "shift-tab",
}

// KeyBytes returns the bytes a terminal in normal cursor mode sends for the named key
// (case-insensitive):
// enter, esc, tab, shift-tab, backspace, space, up, down, left, right, home, end, pgup,
// pgdn, insert, delete, ctrl-a … ctrl-z, ctrl-], ctrl-\, f1 … f12. An unknown name is an
// error that lists the valid ones.
func KeyBytes(name string) ([]byte, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if a, ok := keyAliases[n]; ok {
		n = a
	}
	if b, ok := keyTable()[n]; ok {
		return []byte(b), nil
	}
	return nil, fmt.Errorf("unknown key %q; valid keys: %s", name, strings.Join(KeyNames(), ", "))
}

// KeyNames returns the canonical key names KeyBytes accepts, sorted.
func KeyNames() []string {
	names := make([]string, 0, len(keyTable()))
	for n := range keyTable() {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// keysBytes concatenates the bytes of several keys, failing on the first unknown one
// before anything is sent. In application cursor mode (DECCKM, set by full-screen
// programs such as vim) the cursor keys are sent as SS3 sequences, as a terminal does.
func keysBytes(keys []string, appCursor bool) ([]byte, error) {
	var out []byte
	for _, k := range keys {
		b, err := KeyBytes(k)
		if err != nil {
			return nil, err
		}
		if appCursor && len(b) == 3 && b[0] == 0x1b && b[1] == '[' && strings.IndexByte("ABCDHF", b[2]) >= 0 {
			b = []byte{0x1b, 'O', b[2]}
		}
		out = append(out, b...)
	}
	return out, nil
}
