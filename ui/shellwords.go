package ui

import (
	"fmt"
	"strings"
)

// splitWords splits a command line into argv the way sh splits words, without running
// a shell: blanks separate words; single quotes keep everything literally; double
// quotes keep everything but a backslash before $ ` " \ or a newline; a backslash
// outside quotes keeps the next character (and drops a newline: a continued line). So
// `sh -c 'echo ok; exec cat'` is three words, as a user typing it into a shell expects.
//
// What a shell would expand or interpret — $ and ` (also inside double quotes), the
// operators | ; & < > ( ), and a # that starts a comment — is refused with a hint to
// wrap the command in sh -c '…', because running it differently from a shell would be
// a silent surprise. An unquoted newline is refused too: to sh it ends the command. Globs and ~ are kept literally (the program gets them as typed).
func splitWords(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		in    bool // inside a word (a quoted empty string is a word too)
	)
	end := func() {
		if in {
			words = append(words, cur.String())
			cur.Reset()
			in = false
		}
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t':
			end()
		case ch == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += 1 + j
			in = true
		case ch == '"':
			in = true
			closed := false
			for i++; i < len(s); i++ {
				c := s[i]
				if c == '"' {
					closed = true
					break
				}
				if c == '$' || c == '`' {
					return nil, shellSyntax(c)
				}
				if c == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
					i++
					if s[i] != '\n' {
						cur.WriteByte(s[i])
					}
					continue
				}
				cur.WriteByte(c)
			}
			if !closed {
				return nil, fmt.Errorf(`unterminated " quote`)
			}
		case ch == '\\':
			if i+1 == len(s) {
				cur.WriteByte('\\') // sh keeps a backslash that ends the input
				in = true
				continue
			}
			i++
			if s[i] != '\n' {
				cur.WriteByte(s[i])
				in = true
			}
		case strings.IndexByte("$`|;&<>()\n", ch) >= 0, ch == '#' && !in:
			return nil, shellSyntax(ch)
		default:
			cur.WriteByte(ch)
			in = true
		}
	}
	end()
	return words, nil
}

func shellSyntax(c byte) error {
	return fmt.Errorf("%q is shell syntax and no shell runs this; quote it, or wrap the command: sh -c '…'", c)
}
