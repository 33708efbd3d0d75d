// Package natural orders names the way people number things: runs of digits compare
// by value, so a2 sorts before a10. The CLI's `orcr top` sorts agent paths with it;
// and the dashboard's tree orders its nodes with it.
package natural

import "strings"

// Compare compares a and b: -1, 0 or 1. Equal values with different spellings (a02,
// a2) fall back to byte order, so the order stays total and two names are equal only
// when they are the same string.
func Compare(a, b string) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ca, cb := a[i], b[j]
		if isDigit(ca) && isDigit(cb) {
			ei, ej := i, j
			for ei < len(a) && isDigit(a[ei]) {
				ei++
			}
			for ej < len(b) && isDigit(b[ej]) {
				ej++
			}
			na := strings.TrimLeft(a[i:ei], "0")
			nb := strings.TrimLeft(b[j:ej], "0")
			if len(na) != len(nb) {
				return sign(len(na) - len(nb))
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			i, j = ei, ej
			continue
		}
		if ca != cb {
			return sign(int(ca) - int(cb))
		}
		i++
		j++
	}
	if i < len(a) || j < len(b) {
		return sign((len(a) - i) - (len(b) - j))
	}
	return strings.Compare(a, b)
}

// ComparePaths compares slash-separated paths segment by segment, so a parent sorts
// before its children and siblings in natural order: x/a2, x/a10, x/a10/b, x9.
func ComparePaths(a, b string) int {
	for {
		sa, ra, moreA := strings.Cut(a, "/")
		sb, rb, moreB := strings.Cut(b, "/")
		if c := Compare(sa, sb); c != 0 {
			return c
		}
		switch {
		case !moreA && !moreB:
			return 0
		case !moreA:
			return -1
		case !moreB:
			return 1
		}
		a, b = ra, rb
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}
