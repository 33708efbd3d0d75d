package tmux

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// quote makes s one argument of a tmux command line. Double quotes keep `;`, `#`, `~`,
// `{` and spaces literal; inside them tmux still interprets `\`, `"` and `$`, so those
// are escaped, and control characters are written as octal escapes so the command stays
// on one line.
func quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' || c == '"' || c == '$':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, "\\%03o", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// quoteFormat is quote for arguments tmux expands as formats (window names, start
// directories): a literal `#` is written `##`.
func quoteFormat(s string) string {
	return quote(strings.ReplaceAll(s, "#", "##"))
}

// paneIDPattern is tmux's pane id syntax; anything else is refused before it reaches a
// command line.
var paneIDPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^%[0-9]+$`) })

// keyNames maps core.Host key names to tmux key names. It is built on first use, not
// at init: every orcr process links this package, and most never press a key.
var keyNames = sync.OnceValue(func() map[string]string {
	m := map[string]string{
		"enter": "Enter", "esc": "Escape", "tab": "Tab", "backspace": "BSpace",
		"up": "Up", "down": "Down", "left": "Left", "right": "Right",
		"home": "Home", "end": "End", "pgup": "PPage", "pgdn": "NPage", "space": "Space",
	}
	for c := 'a'; c <= 'z'; c++ {
		m["ctrl-"+string(c)] = "C-" + string(c)
	}
	for i := 1; i <= 12; i++ {
		m[fmt.Sprintf("f%d", i)] = fmt.Sprintf("F%d", i)
	}
	return m
})

// tmuxKey returns the tmux name of a core key name.
func tmuxKey(name string) (string, bool) {
	k, ok := keyNames()[strings.ToLower(name)]
	return k, ok
}
