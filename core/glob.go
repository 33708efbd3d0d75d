package core

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// The glob matcher below keeps doublestar's syntax and meaning ("*" one segment, "**" as a whole
// segment any depth, "?", "[a-z]" classes, "{a,b}" alternatives that may hold "/" and nest,
// "a/**" selecting "a" too) but runs as a Thompson simulation instead of doublestar's
// backtracking, which re-matches the rest of the pattern once per alternative and per "**"
// position: "{**,a}/" repeated 26 times then "b" took 36 s against a 16-level path. Here every
// name rune advances a de-duplicated set of (pattern position, mode) states, so a match costs at
// most O(len(name) × len(pattern)) whatever the pattern.
//
// The simulation holds at most one state per pattern position, so a long run of stars costs a
// state each on every rune: 2,040 stars took 0.1–1 ms a match. A run of three or more stars
// means one star whatever surrounds it (only a run of exactly two can be a doublestar, and
// stars an alternative adds before or after a run of three keep it three or more), so compiling
// such runs as three stars keeps every match's meaning and makes that pattern cheap.
//
// Alternatives are read as doublestar reads them, as text spliced into the pattern: whether "**"
// is a doublestar depends on the characters emitted before and after it, so the simulation
// carries that context (segment start, one or two stars just seen) in the state's mode.

// glob token kinds, one per pattern byte position (a class is one token spanning its bytes).
const (
	tLit   = iota // a literal rune
	tAny          // '?'
	tStar         // '*'
	tClass        // '[...]'
	tOpen         // '{': epsilon to each alternative
	tComma        // ',' inside braces: epsilon past the matching '}'
	tClose        // '}': epsilon to the next position
	tEnd          // end of pattern
)

// modes of a simulation state.
const (
	mNorm0 = iota // ready to emit the next token, not at a segment start
	mNorm1        // ready, at a segment start (pattern start or just after '/')
	mStar0        // one '*' emitted, not at a segment start
	mStar1        // one '*' emitted at a segment start
	mDbl0         // "**" emitted, not at a segment start: a single star
	mDbl1         // "**" emitted at a segment start: a doublestar if '/' or the end follows
	mLoop         // inside a single star before the token at pos: eats non-'/' runes
	mDirB         // inside "**/" at a segment boundary: may leave to mNorm1 at pos
	mDirS         // inside "**/" in the middle of a segment
	nModes
)

type globTok struct {
	kind int
	r    rune      // tLit
	next int       // position after this token (after ']' for a class, after '}' for a comma)
	alts []int     // tOpen: the first position of each alternative
	neg  bool      // tClass: negated
	set  [][2]rune // tClass: inclusive ranges
}

type globProg struct {
	// sims holds spare simulations: a match reuses one instead of allocating its state table
	// (len(toks) × nModes words).
	sims sync.Pool
	toks []globTok // len(pattern)+1 entries; toks[len] is tEnd; positions inside a class are unused
	// reversed is the first class range whose end comes before its start ("z-a"), which
	// ParseGlob refuses: it matches nothing, and doublestar reads it differently.
	reversed string
}

// compileGlob builds the program for a pattern doublestar.ValidatePattern accepted and that has
// no '\\' (ParseGlob refuses escapes).
func compileGlob(p string) *globProg {
	p = collapseStars(p)
	prog := &globProg{}
	toks := make([]globTok, len(p)+1)
	toks[len(p)] = globTok{kind: tEnd}
	var opens []int // stack of open '{' positions
	for i := 0; i < len(p); {
		switch p[i] {
		case '*':
			toks[i] = globTok{kind: tStar, next: i + 1}
			i++
		case '?':
			toks[i] = globTok{kind: tAny, next: i + 1}
			i++
		case '[':
			j := i + 1
			t := globTok{kind: tClass}
			if p[j] == '!' || p[j] == '^' {
				t.neg = true
				j++
			}
			// doublestar reads "lo-hi" ranges and single runes up to the first ']'.
			last := rune(-1)
			for p[j] != ']' {
				r, n := utf8.DecodeRuneInString(p[j:])
				j += n
				if last >= 0 && r == '-' && p[j] != ']' {
					hi, n := utf8.DecodeRuneInString(p[j:])
					j += n
					if hi < last && prog.reversed == "" {
						prog.reversed = string(last) + "-" + string(hi)
					}
					t.set[len(t.set)-1][1] = hi
					last = -1
					continue
				}
				t.set = append(t.set, [2]rune{r, r})
				last = r
			}
			t.next = j + 1
			toks[i] = t
			i = j + 1
		case '{':
			toks[i] = globTok{kind: tOpen, alts: []int{i + 1}}
			opens = append(opens, i)
			i++
		case ',':
			if len(opens) == 0 {
				toks[i] = globTok{kind: tLit, r: ',', next: i + 1}
			} else {
				o := opens[len(opens)-1]
				toks[o].alts = append(toks[o].alts, i+1)
				toks[i] = globTok{kind: tComma, next: o} // fixed up at the matching '}'
			}
			i++
		case '}':
			o := opens[len(opens)-1]
			opens = opens[:len(opens)-1]
			for _, a := range toks[o].alts[1:] {
				toks[a-1].next = i + 1
			}
			toks[i] = globTok{kind: tClose, next: i + 1}
			i++
		default:
			r, n := utf8.DecodeRuneInString(p[i:])
			toks[i] = globTok{kind: tLit, r: r, next: i + n}
			i += n
		}
	}
	prog.toks = toks
	return prog
}

// collapseStars rewrites every run of more than three '*' as three (see the package comment
// above: such runs mean one star).
func collapseStars(p string) string {
	if !strings.Contains(p, "****") {
		return p
	}
	var b strings.Builder
	run := 0
	for i := 0; i < len(p); i++ {
		if p[i] == '*' {
			run++
			if run > 3 {
				continue
			}
		} else {
			run = 0
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// classHas reports whether a class matches r. No class matches '/', so "[!a]" stays inside one
// segment like '?' (doublestar would let it cross, which its own star backtracking then misses).
func (t *globTok) classHas(r rune) bool {
	if r == '/' {
		return false
	}
	in := false
	for _, s := range t.set {
		if s[0] <= r && r <= s[1] {
			in = true
			break
		}
	}
	return in != t.neg
}

// globSim is one match's state sets.
type globSim struct {
	prog      *globProg
	seen      []uint32 // per (pos, mode): the generation that added it
	gen       uint32
	cur, next []int32 // consuming states, encoded pos*nModes+mode
	all       bool    // a trailing doublestar was reached: everything left matches
}

func (s *globSim) add(pos, mode int) {
	k := pos*nModes + mode
	if s.seen[k] == s.gen {
		return
	}
	s.seen[k] = s.gen
	switch mode {
	case mDirB:
		s.next = append(s.next, int32(k))
		s.add(pos, mNorm1)
		return
	case mDirS:
		s.next = append(s.next, int32(k))
		return
	}
	t := &s.prog.toks[pos]
	switch t.kind {
	case tOpen:
		for _, a := range t.alts {
			s.add(a, mode)
		}
		return
	case tComma, tClose:
		s.add(t.next, mode)
		return
	}
	// pos is a concrete token (or the end).
	switch mode {
	case mNorm0, mNorm1:
		if t.kind == tStar {
			s.add(t.next, mStar0+mode-mNorm0)
			return
		}
		s.next = append(s.next, int32(k))
	case mStar0, mStar1:
		if t.kind == tStar {
			s.add(t.next, mDbl0+mode-mStar0)
			return
		}
		s.add(pos, mLoop)
	case mDbl0, mDbl1:
		switch {
		case mode == mDbl1 && t.kind == tLit && t.r == '/':
			s.add(t.next, mDirB)
		case mode == mDbl1 && t.kind == tEnd:
			s.all = true
		default:
			s.add(pos, mLoop) // "**" inside a segment is a single star, as in bash
		}
	case mLoop:
		s.next = append(s.next, int32(k))
		s.add(pos, mNorm0)
	}
}

// step advances every consuming state over rune r.
func (s *globSim) step(r rune) {
	s.gen++
	s.cur, s.next = s.next, s.cur[:0]
	for _, k := range s.cur {
		pos, mode := int(k)/nModes, int(k)%nModes
		t := &s.prog.toks[pos]
		switch mode {
		case mNorm0, mNorm1:
			switch t.kind {
			case tLit:
				if t.r == r {
					if r == '/' {
						s.add(t.next, mNorm1)
					} else {
						s.add(t.next, mNorm0)
					}
				}
			case tAny:
				if r != '/' {
					s.add(t.next, mNorm0)
				}
			case tClass:
				if t.classHas(r) {
					s.add(t.next, mNorm0)
				}
			}
		case mLoop:
			if r != '/' {
				s.add(pos, mLoop)
			}
		case mDirB, mDirS:
			if r == '/' {
				s.add(pos, mDirB)
			} else {
				s.add(pos, mDirS)
			}
		}
	}
}

// accepting reports whether the states left after the whole name accept. Besides the end of the
// pattern, a remaining "/**" or "/**/" matches nothing, so "a/**" selects "a".
func (s *globSim) accepting() bool {
	if s.all {
		return true
	}
	for _, k := range s.next {
		pos, mode := int(k)/nModes, int(k)%nModes
		t := &s.prog.toks[pos]
		switch {
		case t.kind == tEnd:
			return true
		case (mode == mNorm0 || mode == mNorm1) && t.kind == tLit && t.r == '/' && s.prog.dirTail(t.next):
			return true
		}
	}
	return false
}

// dirTail reports whether the tokens from pos can read "**" then the end or "/" and the end.
// It walks at most four tokens past any braces, remembering what it tried so nested
// alternatives cannot make it exponential.
func (g *globProg) dirTail(pos int) bool {
	tried := map[[2]int]bool{}
	var walk func(pos, i int) bool
	walk = func(pos, i int) bool {
		if tried[[2]int{pos, i}] {
			return false
		}
		tried[[2]int{pos, i}] = true
		t := &g.toks[pos]
		switch t.kind {
		case tOpen:
			for _, a := range t.alts {
				if walk(a, i) {
					return true
				}
			}
			return false
		case tComma, tClose:
			return walk(t.next, i)
		}
		switch i {
		case 0, 1: // the two stars
			return t.kind == tStar && walk(t.next, i+1)
		case 2: // the end, or '/' then the end
			return t.kind == tEnd || t.kind == tLit && t.r == '/' && walk(t.next, 3)
		default:
			return t.kind == tEnd
		}
	}
	return walk(pos, 0)
}

func (g *globProg) match(name string) bool {
	return g.run(name, false)
}

// matchUnder reports whether name or one of its ancestors matches: one pass over name that asks
// whether the states accept before each '/', instead of one match per ancestor.
func (g *globProg) matchUnder(name string) bool {
	return g.run(name, true)
}

func (g *globProg) run(name string, ancestors bool) bool {
	s, _ := g.sims.Get().(*globSim)
	if s == nil {
		s = &globSim{prog: g, seen: make([]uint32, len(g.toks)*nModes)}
	}
	defer g.sims.Put(s)
	s.reset()
	s.add(0, mNorm1)
	for _, r := range name {
		if len(s.next) == 0 && !s.all {
			return false
		}
		if s.all {
			return true
		}
		if ancestors && r == '/' && s.accepting() {
			return true
		}
		s.step(r)
	}
	return s.accepting()
}

// reset readies a used simulation for a new match. The generation counter goes on from the
// last match (one per rune), so the table needs no clearing until the counter nears its end.
func (s *globSim) reset() {
	s.cur, s.next, s.all = s.cur[:0], s.next[:0], false
	if s.gen >= 1<<31 {
		clear(s.seen)
		s.gen = 0
	}
	s.gen++
}
