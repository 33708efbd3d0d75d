package strictfile

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
)

// part is one step of a key's path: a name, or the index of an element of an array (of
// tables, or of inline tables).
type part struct {
	name  string
	index int
	isIdx bool
}

// path is a key with the array indexes BurntSushi/toml leaves out: "model[1].id".
type path []part

func (p path) key(name string) path {
	return append(p[:len(p):len(p)], part{name: name})
}

func (p path) index(i int) path {
	return append(p[:len(p):len(p)], part{index: i, isIdx: true})
}

func (p path) parent() path {
	if len(p) == 0 {
		return p
	}
	return p[:len(p)-1]
}

// String writes names as TOML does (quoted when not bare) and indexes in brackets.
func (p path) String() string {
	var b strings.Builder
	for i, s := range p {
		switch {
		case s.isIdx:
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(toml.Key{s.name}.String())
		}
	}
	return b.String()
}

// plain is the key without indexes, as toml.MetaData names it.
func (p path) plain() string {
	var k toml.Key
	for _, s := range p {
		if !s.isIdx {
			k = append(k, s.name)
		}
	}
	return k.String()
}

// table names the table p is, for a message: " in [[model]]", " in [tiers.small]", or
// "" at the top level.
func (p path) table() string {
	if len(p) == 0 {
		return ""
	}
	if p[len(p)-1].isIdx {
		return " in [[" + p.plain() + "]]"
	}
	return " in [" + p.plain() + "]"
}

type occurrence struct {
	path path
	line int
}

// index is where each key of a document is: the line of every key and table, by its path
// with indexes, and every occurrence of a key without indexes (what Undecoded names).
type index struct {
	lines       map[string]int
	occurrences map[string][]occurrence
}

// line is key's line, else its nearest enclosing table's, else 0.
func (ix *index) line(key string) int {
	for {
		if n, ok := ix.lines[key]; ok {
			return n
		}
		i := parentCut(key)
		if i < 0 {
			return 0
		}
		key = key[:i]
	}
}

// parentCut is where key's last part starts (its '.' or '['), outside quotes; -1 at the top.
func parentCut(key string) int {
	cut, quote := -1, byte(0)
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '.' || c == '[':
			cut = i
		}
	}
	return cut
}

func (ix *index) record(p path, line int) {
	k := p.String()
	if _, ok := ix.lines[k]; ok {
		return
	}
	ix.lines[k] = line
	if len(p) > 0 && p[len(p)-1].isIdx {
		return // the element of an array: the array itself is the occurrence of its key
	}
	pl := p.plain()
	ix.occurrences[pl] = append(ix.occurrences[pl], occurrence{path: p, line: line})
}

// scanner walks a TOML document for where its keys are. It runs only on documents the
// decoder accepted, so it need not diagnose anything; on any input it ends (every step
// consumes at least one byte) and never panics, which FuzzStrictLoad holds it to.
type scanner struct {
	src      string
	i        int
	newlines []int // offsets of '\n', for the line of an offset
	ix       *index
	arrays   map[string]int // an array of tables (by path) → elements so far
}

func scan(src []byte) *index {
	s := &scanner{src: string(src), ix: &index{lines: map[string]int{}, occurrences: map[string][]occurrence{}},
		arrays: map[string]int{}}
	for i := 0; i < len(s.src); i++ {
		if s.src[i] == '\n' {
			s.newlines = append(s.newlines, i)
		}
	}
	s.document()
	return s.ix
}

func (s *scanner) lineAt(off int) int { return sort.SearchInts(s.newlines, off) + 1 }

func (s *scanner) eof() bool { return s.i >= len(s.src) }

// space skips blanks, and newlines and comments too when nl is set.
func (s *scanner) space(nl bool) {
	for !s.eof() {
		switch c := s.src[s.i]; {
		case c == ' ' || c == '\t':
			s.i++
		case nl && (c == '\n' || c == '\r'):
			s.i++
		case nl && c == '#':
			s.skipLine()
		default:
			return
		}
	}
}

func (s *scanner) skipLine() {
	if j := strings.IndexByte(s.src[s.i:], '\n'); j >= 0 {
		s.i += j + 1
	} else {
		s.i = len(s.src)
	}
}

func (s *scanner) document() {
	var table path
	for {
		s.space(true)
		if s.eof() {
			return
		}
		start := s.i
		line := s.lineAt(s.i)
		if s.src[s.i] == '[' {
			array := strings.HasPrefix(s.src[s.i:], "[[")
			s.i++
			if array {
				s.i++
			}
			table = s.header(s.keyParts(), array, line)
		} else {
			names := s.keyParts()
			s.space(false)
			if !s.eof() && s.src[s.i] == '=' {
				s.i++
				s.value(s.define(table, names, line))
			}
		}
		s.skipLine()
		if s.i <= start {
			s.i = start + 1
		}
	}
}

// header resolves a [table] or [[array]] header: a name that is an array of tables so far
// means its last element, and [[x]] adds an element.
func (s *scanner) header(names []string, array bool, line int) path {
	var p path
	for j, n := range names {
		p = p.key(n)
		k := p.String()
		if array && j == len(names)-1 {
			c := s.arrays[k]
			s.arrays[k] = c + 1
			s.ix.record(p, line)
			p = p.index(c)
		} else if c := s.arrays[k]; c > 0 {
			p = p.index(c - 1)
		}
		s.ix.record(p, line)
	}
	return p
}

// define records a dotted key (and the tables it implies) under table at line.
func (s *scanner) define(table path, names []string, line int) path {
	p := table
	for _, n := range names {
		p = p.key(n)
		s.ix.record(p, line)
	}
	return p
}

// keyParts reads a dotted key: bare, "basic" or 'literal' parts separated by dots.
func (s *scanner) keyParts() []string {
	var out []string
	for {
		s.space(false)
		if s.eof() {
			return out
		}
		switch c := s.src[s.i]; c {
		case '"':
			start := s.i
			s.basic()
			out = append(out, unescape(s.src[start+1:max(start+1, s.i-1)]))
		case '\'':
			start := s.i
			s.literal()
			out = append(out, s.src[start+1:max(start+1, s.i-1)])
		default:
			start := s.i
			for !s.eof() && bare(s.src[s.i]) {
				s.i++
			}
			if s.i == start {
				return out
			}
			out = append(out, s.src[start:s.i])
		}
		s.space(false)
		if s.eof() || s.src[s.i] != '.' {
			return out
		}
		s.i++
	}
}

func bare(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// value skips one value; the keys of inline tables in it are recorded under p.
func (s *scanner) value(p path) {
	s.space(false)
	if s.eof() {
		return
	}
	switch s.src[s.i] {
	case '"':
		if strings.HasPrefix(s.src[s.i:], `"""`) {
			s.multi(`"""`)
		} else {
			s.basic()
		}
	case '\'':
		if strings.HasPrefix(s.src[s.i:], "'''") {
			s.multi("'''")
		} else {
			s.literal()
		}
	case '[':
		s.i++
		for n := 0; ; {
			s.space(true)
			if s.eof() {
				return
			}
			switch s.src[s.i] {
			case ']':
				s.i++
				return
			case ',':
				s.i++
				continue
			}
			start := s.i
			el := p.index(n)
			if s.src[s.i] == '{' {
				s.ix.record(el, s.lineAt(s.i))
			}
			s.value(el)
			n++
			if s.i == start {
				s.i++
			}
		}
	case '{':
		s.i++
		for {
			s.space(true)
			if s.eof() {
				return
			}
			switch s.src[s.i] {
			case '}':
				s.i++
				return
			case ',':
				s.i++
				continue
			}
			start := s.i
			line := s.lineAt(s.i)
			names := s.keyParts()
			s.space(false)
			if !s.eof() && s.src[s.i] == '=' {
				s.i++
				s.value(s.define(p, names, line))
			}
			if s.i == start {
				s.i++
			}
		}
	default:
		// A number, boolean or date (which may hold a space: 1979-05-27 07:32:00).
		for !s.eof() && !strings.ContainsRune(",]}#\n\r", rune(s.src[s.i])) {
			s.i++
		}
	}
}

// basic skips a "basic string" (s.i at its quote).
func (s *scanner) basic() {
	s.i++
	for !s.eof() {
		switch s.src[s.i] {
		case '\\':
			s.i += 2
			continue
		case '"':
			s.i++
			return
		case '\n':
			return
		}
		s.i++
	}
	s.i = min(s.i, len(s.src))
}

// literal skips a 'literal string'.
func (s *scanner) literal() {
	s.i++
	for !s.eof() {
		switch s.src[s.i] {
		case '\'':
			s.i++
			return
		case '\n':
			return
		}
		s.i++
	}
}

// multi skips a multi-line string whose delimiter is d; up to two more quotes right
// before the closing delimiter belong to the string.
func (s *scanner) multi(d string) {
	s.i += 3
	for !s.eof() {
		if d == `"""` && s.src[s.i] == '\\' {
			s.i += 2
			continue
		}
		if strings.HasPrefix(s.src[s.i:], d) {
			s.i += 3
			for n := 0; n < 2 && !s.eof() && s.src[s.i] == d[0]; n++ {
				s.i++
			}
			return
		}
		s.i++
	}
	s.i = min(s.i, len(s.src))
}

// unescape reads a basic string's escapes (\", \\, \n, \uXXXX, …), for quoted key names.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 'b':
			b.WriteByte('\b')
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'f':
			b.WriteByte('\f')
		case 'r':
			b.WriteByte('\r')
		case 'e':
			b.WriteByte(0x1b)
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
			if i+1+n <= len(s) {
				if r, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32); err == nil && utf8.ValidRune(rune(r)) {
					b.WriteRune(rune(r))
					i += n
					continue
				}
			}
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
