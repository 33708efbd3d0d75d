package listen

import (
	"strconv"
	"strings"
)

// keyLines maps each key of a listener file to the line it is on, so errors found
// after decoding (an unknown key, a bad value) can name the line as the TOML parser's
// own errors do. It understands what listener files use: [table] and [[array]]
// headers and key = value lines; keys of the n-th [[rate_limits]] are
// "rate_limits.N.key" (N from 0).
type keyLines map[string]int

func indexLines(src string) keyLines {
	out := keyLines{}
	table := ""
	arrays := map[string]int{}
	for i, raw := range strings.Split(src, "\n") {
		line := strings.TrimSpace(raw)
		if line == "" || line[0] == '#' {
			continue
		}
		if strings.HasPrefix(line, "[[") {
			name := strings.TrimSpace(strings.Trim(strings.SplitN(line, "#", 2)[0], "[] \t"))
			table = name + "." + strconv.Itoa(arrays[name])
			arrays[name]++
			out[table] = i + 1
			continue
		}
		if line[0] == '[' {
			table = strings.TrimSpace(strings.Trim(strings.SplitN(line, "#", 2)[0], "[] \t"))
			out[table] = i + 1
			continue
		}
		k, _, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		key := strings.Trim(strings.TrimSpace(k), `"'`)
		if table != "" {
			key = table + "." + key
		}
		if _, seen := out[key]; !seen {
			out[key] = i + 1
		}
	}
	return out
}

// line returns the line of key, or of the nearest enclosing table, or 0.
func (k keyLines) line(key string) int {
	for key != "" {
		if n, ok := k[key]; ok {
			return n
		}
		i := strings.LastIndex(key, ".")
		if i < 0 {
			break
		}
		key = key[:i]
	}
	return 0
}

// lineAnyIndex finds an array-of-tables key whatever its index ("rate_limits.foo"
// matches "rate_limits.2.foo"), for the decoder's undecoded keys, which carry none.
func (k keyLines) lineAnyIndex(key string) int {
	if n := k.line(key); n != 0 && k[key] != 0 {
		return n
	}
	table, rest, ok := strings.Cut(key, ".")
	if !ok {
		return k.line(key)
	}
	best := 0
	for i := 0; ; i++ {
		prefix := table + "." + strconv.Itoa(i)
		if _, ok := k[prefix]; !ok {
			break
		}
		if n, ok := k[prefix+"."+rest]; ok && (best == 0 || n < best) {
			best = n
		}
	}
	if best != 0 {
		return best
	}
	return k.line(key)
}

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
