package listen

import (
	"strconv"
	"strings"
)

// Bounds checked before the TOML decoder sees a document: its decoding is quadratic in
// the depth of dotted keys and nested inline tables (a 40 KB line of "x.x.x…" took 28 s),
// and a listener can be written through the API, so shape is bounded first (DESIGN §13).
const (
	MaxDocBytes = 64 << 10
	maxNesting  = 16 // [ and { outside strings
	maxLineDots = 16 // dots outside strings on one line (dotted keys)
)

// checkShape refuses documents past those bounds, naming the line. It tracks TOML's
// four string forms and comments, so templates ("{{title}}") and dotted text in values
// do not count.
func checkShape(doc string) (line int, msg string) {
	if len(doc) > MaxDocBytes {
		return 0, "the document is over " + strconv.Itoa(MaxDocBytes>>10) + " KiB"
	}
	line, depth, dots := 1, 0, 0
	for i := 0; i < len(doc); i++ {
		c := doc[i]
		switch {
		case c == '\n':
			line++
			dots = 0
		case c == '#':
			for i < len(doc) && doc[i] != '\n' {
				i++
			}
			i--
		case c == '"' || c == '\'':
			quote := doc[i : i+1]
			multi := strings.HasPrefix(doc[i:], strings.Repeat(quote, 3))
			if multi {
				quote = strings.Repeat(quote, 3)
			}
			j := i + len(quote)
			for j < len(doc) {
				if c == '"' && doc[j] == '\\' {
					j += 2
					continue
				}
				if strings.HasPrefix(doc[j:], quote) {
					break
				}
				if doc[j] == '\n' {
					if !multi {
						break
					}
					line++
				}
				j++
			}
			i = j + len(quote) - 1
		case c == '[' || c == '{':
			depth++
			if depth > maxNesting {
				return line, "nested more than " + strconv.Itoa(maxNesting) + " levels deep"
			}
		case c == ']' || c == '}':
			depth = max(depth-1, 0)
		case c == '.':
			dots++
			if dots > maxLineDots {
				return line, "a key with more than " + strconv.Itoa(maxLineDots) + " dotted parts"
			}
		}
	}
	return 0, ""
}
