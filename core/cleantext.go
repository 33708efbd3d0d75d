package core

import (
	"strings"
	"unicode/utf8"
)

// Text typed into a pane reaches the program as keystrokes: a Ctrl-C byte (0x03) in a
// check's output interrupted the coder it was relayed to (exit 130), ESC[31m reached
// claude as an Escape that cancels its turn, and random binary stopped both coders.
// agent.send (and an answer's text) is the one way text reaches a pane, so every text
// is cleaned there with CleanText: whatever relays it — check output, review
// blockers, answers, listener data, lead messages, a user's `agent send` — can type
// only printable text. Keys (--keys) are named and stay the sender's deliberate choice.

// CleanText returns s with everything a terminal would take as a control removed, so
// it can be typed into a pane as text: escape sequences (CSI, OSC and the other
// string sequences, two- and three-byte ESC sequences, and their C1 forms) are dropped
// whole rather than leaving printable tails like "[31m"; a tab becomes a space; CR LF
// and a lone CR become LF (a CR typed is Enter, which would submit half a message);
// other C0 controls, DEL and C1 controls are dropped; each run of invalid UTF-8 becomes
// U+FFFD. Line feeds stay: what a newline means is the sender's (claude takes one in a
// paste as a line break). Printable runes, non-ASCII included, are kept as they are.
func CleanText(s string) string {
	if isClean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	invalid := false // the last thing written was U+FFFD for invalid bytes
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			if !invalid {
				b.WriteRune(utf8.RuneError)
			}
			invalid = true
			i++
			continue
		}
		invalid = false
		switch {
		case r == '\n':
			b.WriteByte('\n')
		case r == '\t':
			b.WriteByte(' ')
		case r == '\r':
			if i+1 >= len(s) || s[i+1] != '\n' {
				b.WriteByte('\n')
			}
		case r == 0x1b:
			i += escLen(s[i:])
			continue
		case r == 0x9b: // C1 CSI
			i += size + csiLen(s[i+size:])
			continue
		case r == 0x90 || r == 0x98 || r == 0x9d || r == 0x9e || r == 0x9f: // C1 DCS, SOS, OSC, PM, APC
			i += size + stringLen(s[i+size:])
			continue
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			// A control: dropped.
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// isClean reports whether s has nothing CleanText would change: valid UTF-8 with no
// control but a line feed.
func isClean(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || (r < 0x20 && r != '\n') || (r >= 0x7f && r <= 0x9f) {
			return false
		}
	}
	return true
}

// escLen is the length of the escape sequence at the start of s (s[0] is ESC): ESC
// alone when what follows cannot continue one.
func escLen(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	switch c := s[1]; {
	case c == '[':
		return 2 + csiLen(s[2:])
	case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
		return 2 + stringLen(s[2:])
	case c >= 0x20 && c <= 0x2f: // intermediates, then a final byte: ESC ( B
		n := 1
		for n < len(s) && s[n] >= 0x20 && s[n] <= 0x2f {
			n++
		}
		if n < len(s) && s[n] >= 0x30 && s[n] <= 0x7e {
			n++
		}
		return n
	case c >= 0x30 && c <= 0x7e: // ESC 7, ESC =, ESC c
		return 2
	}
	return 1
}

// csiLen is the length of a control sequence's body (after ESC [): parameter and
// intermediate bytes, then the final byte. A byte that cannot be part of one ends it
// there, as a terminal aborts the sequence.
func csiLen(s string) int {
	n := 0
	for n < len(s) && s[n] >= 0x20 && s[n] <= 0x3f {
		n++
	}
	if n < len(s) && s[n] >= 0x40 && s[n] <= 0x7e {
		n++
	}
	return n
}

// stringLen is the length of a string sequence's body (after ESC ] and the like) up to
// and with its terminator: BEL, ESC \ or C1 ST. A line feed also ends it (and is
// kept), so an unterminated title cannot swallow the rest of a check's output.
func stringLen(s string) int {
	for n := 0; n < len(s); n++ {
		switch {
		case s[n] == 0x07:
			return n + 1
		case s[n] == 0x1b:
			if n+1 < len(s) && s[n+1] == '\\' {
				return n + 2
			}
			return n // a new sequence begins
		case s[n] == '\n':
			return n
		case strings.HasPrefix(s[n:], "\u009c"):
			return n + len("\u009c")
		}
	}
	return len(s)
}
