package early

import (
	"errors"
	"sort"
	"strconv"
	"unicode/utf8"
)

// The request and reply of AnswerRun, without encoding/json (whose import would make
// this package wait as package fast does). Only what an agent.run needs: the request
// holds strings, a few numbers and booleans, lists and maps of strings; the reply is
// read into maps, lists, strings, numbers (kept as their text), booleans and nil.

// runRequest is the agent.run request line of p, with its newline: the JSON of core's
// socket client (the fields of RunParams that are set, as encoding/json writes them
// with omitempty). It is not ok for a string that is not UTF-8 (encoding/json would
// change it): fast, then, writes the request.
func runRequest(p *RunParams, caller string) ([]byte, bool) {
	w := jsonWriter{b: make([]byte, 0, 512), ok: true}
	w.raw(`{"id":"1","method":"agent.run","params":{"path":`)
	w.str(p.Path)
	w.field("provider", p.Provider)
	w.field("model", p.Model)
	if len(p.Argv) > 0 {
		w.raw(`,"argv":[`)
		for i, a := range p.Argv {
			if i > 0 {
				w.raw(",")
			}
			w.str(a)
		}
		w.raw("]")
	}
	w.field("cwd", p.Cwd)
	w.strMap("env", p.Env)
	w.field("prompt", p.Prompt)
	if p.Priority != 0 {
		w.raw(`,"priority":` + strconv.Itoa(p.Priority))
	}
	if p.Keep {
		w.raw(`,"keep":true`)
	}
	w.field("worktree", p.Worktree)
	w.field("role", p.Role)
	w.strMap("vars", p.Vars)
	w.field("account", p.Account)
	w.field("identity", p.Identity)
	w.field("mcp", p.MCP)
	w.raw("}")
	w.field("caller", caller)
	w.raw(`,"version":` + strconv.Itoa(ProtocolVersion) + "}\n")
	return w.b, w.ok
}

// jsonWriter appends JSON; ok turns false at a string that is not UTF-8.
type jsonWriter struct {
	b  []byte
	ok bool
}

func (w *jsonWriter) raw(s string) {
	w.b = append(w.b, s...)
}

// field writes ,"name":"v" unless v is empty (omitempty).
func (w *jsonWriter) field(name, v string) {
	if v == "" {
		return
	}
	w.raw(`,"` + name + `":`)
	w.str(v)
}

// strMap writes ,"name":{…} with the keys sorted, unless m is empty (omitempty).
func (w *jsonWriter) strMap(name string, m map[string]string) {
	if len(m) == 0 {
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	w.raw(`,"` + name + `":{`)
	for i, k := range keys {
		if i > 0 {
			w.raw(",")
		}
		w.str(k)
		w.raw(":")
		w.str(m[k])
	}
	w.raw("}")
}

// str writes s as a JSON string: quotes, backslashes and control characters escaped.
func (w *jsonWriter) str(s string) {
	if !utf8.ValidString(s) {
		w.ok = false
	}
	const hex = "0123456789abcdef"
	w.b = append(w.b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			w.b = append(w.b, '\\', c)
		case c == '\n':
			w.b = append(w.b, '\\', 'n')
		case c == '\t':
			w.b = append(w.b, '\\', 't')
		case c == '\r':
			w.b = append(w.b, '\\', 'r')
		case c < 0x20:
			w.b = append(w.b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			w.b = append(w.b, c)
		}
	}
	w.b = append(w.b, '"')
}

// parseJSON reads one JSON value (surrounding whitespace allowed) into maps
// (map[string]any; the last of a repeated key wins), lists ([]any), strings, numbers
// (their text, as a jsonNumber), booleans and nil.
func parseJSON(b []byte) (any, error) {
	p := jsonParser{b: b}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.b) {
		return nil, p.fail("after the value")
	}
	return v, nil
}

// jsonNumber is a number's text.
type jsonNumber string

type jsonParser struct {
	b []byte
	i int
}

// maxDepth bounds nesting, as encoding/json does (10,000).
const maxDepth = 10000

func (p *jsonParser) fail(what string) error {
	return errors.New("invalid JSON in the server's reply at offset " + strconv.Itoa(p.i) + ": " + what)
}

func (p *jsonParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (any, error) {
	if depth > maxDepth {
		return nil, p.fail("nested too deep")
	}
	p.space()
	if p.i >= len(p.b) {
		return nil, p.fail("unexpected end")
	}
	switch c := p.b[p.i]; {
	case c == '{':
		p.i++
		m := map[string]any{}
		p.space()
		if p.i < len(p.b) && p.b[p.i] == '}' {
			p.i++
			return m, nil
		}
		for {
			p.space()
			k, err := p.str()
			if err != nil {
				return nil, err
			}
			p.space()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return nil, p.fail("expected ':'")
			}
			p.i++
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			m[k] = v
			if more, err := p.sep('}'); err != nil {
				return nil, err
			} else if !more {
				return m, nil
			}
		}
	case c == '[':
		p.i++
		l := []any{}
		p.space()
		if p.i < len(p.b) && p.b[p.i] == ']' {
			p.i++
			return l, nil
		}
		for {
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
			if more, err := p.sep(']'); err != nil {
				return nil, err
			} else if !more {
				return l, nil
			}
		}
	case c == '"':
		return p.str()
	case c == 't':
		return true, p.word("true")
	case c == 'f':
		return false, p.word("false")
	case c == 'n':
		return nil, p.word("null")
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	return nil, p.fail("unexpected character")
}

// sep reads what follows a member or an element: ',' (more: true) or close.
func (p *jsonParser) sep(close byte) (more bool, err error) {
	p.space()
	if p.i < len(p.b) {
		switch p.b[p.i] {
		case ',':
			p.i++
			return true, nil
		case close:
			p.i++
			return false, nil
		}
	}
	return false, p.fail("expected ',' or '" + string(close) + "'")
}

func (p *jsonParser) word(w string) error {
	if len(p.b)-p.i < len(w) || string(p.b[p.i:p.i+len(w)]) != w {
		return p.fail("expected " + w)
	}
	p.i += len(w)
	return nil
}

// number reads JSON's number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *jsonParser) number() (any, error) {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.b[p.i] == '-' {
		p.i++
	}
	if p.i < len(p.b) && p.b[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return nil, p.fail("bad number")
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, p.fail("bad number")
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, p.fail("bad number")
		}
	}
	// encoding/json refuses a number a float64 cannot hold (1E700) when it decodes
	// into any, as the full command line does: so does this.
	if _, err := strconv.ParseFloat(string(p.b[start:p.i]), 64); err != nil {
		return nil, p.fail("number out of range")
	}
	return jsonNumber(p.b[start:p.i]), nil
}

// str reads a JSON string as encoding/json does: escapes decoded, a lone surrogate
// or a byte that is not UTF-8 read as U+FFFD.
func (p *jsonParser) str() (string, error) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return "", p.fail("expected a string")
	}
	p.i++
	var out []byte
	for {
		if p.i >= len(p.b) {
			return "", p.fail("unterminated string")
		}
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return string(out), nil
		case c < 0x20:
			return "", p.fail("control character in a string")
		case c == '\\':
			if p.i+1 >= len(p.b) {
				return "", p.fail("unterminated string")
			}
			e := p.b[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return "", p.fail("bad \\u escape")
				}
				if r >= 0xd800 && r < 0xdc00 {
					// A high surrogate: a pair with the low one that follows, if it does.
					save := p.i
					if p.i+1 < len(p.b) && p.b[p.i] == '\\' && p.b[p.i+1] == 'u' {
						p.i += 2
						if r2, ok := p.hex4(); ok && r2 >= 0xdc00 && r2 < 0xe000 {
							r = (r-0xd800)<<10 | (r2 - 0xdc00) + 0x10000
							out = utf8.AppendRune(out, r)
							continue
						}
					}
					p.i = save
					r = utf8.RuneError
				} else if r >= 0xdc00 && r < 0xe000 {
					r = utf8.RuneError
				}
				out = utf8.AppendRune(out, r)
			default:
				return "", p.fail("bad escape")
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			p.i++
		default:
			r, size := utf8.DecodeRune(p.b[p.i:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, p.b[p.i:p.i+size]...)
			}
			p.i += size
		}
	}
}

// hex4 reads the four hex digits of a \u escape.
func (p *jsonParser) hex4() (rune, bool) {
	if len(p.b)-p.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range p.b[p.i : p.i+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	p.i += 4
	return r, true
}
