package planning

import "strings"

// Line-level recognisers of the plan format: Markdown headings and code fences (the
// CommonMark rules that matter here), key lines and task-list boxes.

// fenceOpen reports a code fence opener (``` or ~~~, up to three spaces in) and returns
// its marker, which the closing fence must repeat at least as long.
func fenceOpen(line string) string {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 || len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return ""
	}
	n := 0
	for n < len(t) && t[n] == t[0] {
		n++
	}
	if n < 3 || (t[0] == '`' && strings.Contains(t[n:], "`")) {
		return ""
	}
	return t[:n]
}

func fenceCloses(line, marker string) bool {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 || !strings.HasPrefix(t, marker) {
		return false
	}
	return strings.TrimSpace(strings.TrimLeft(t, marker[:1])) == ""
}

// heading parses an ATX heading: its level and text, or level 0.
func heading(line string) (int, string) {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return 0, ""
	}
	n := 0
	for n < len(t) && t[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || (n < len(t) && t[n] != ' ' && t[n] != '\t') {
		return 0, ""
	}
	text := strings.TrimSpace(t[n:])
	// An optional closing sequence of #s, preceded by a space, is not part of the text.
	if trimmed := strings.TrimRight(text, "#"); trimmed != text && (trimmed == "" || strings.HasSuffix(trimmed, " ")) {
		text = strings.TrimSpace(trimmed)
	}
	return n, text
}

// keyLine matches "key: value": a key of letters, digits, '_' and '-' starting with a
// letter at the start of the line, optional blanks, a colon. It returns where the key
// ends and where the colon is. (Hand-written: a regexp here was a third of parse time.)
func keyLine(s string) (keyEnd, colon int, ok bool) {
	i := 0
	for i < len(s) && (isLetter(s[i]) || i > 0 && (isDigit(s[i]) || s[i] == '_' || s[i] == '-')) {
		i++
	}
	if i == 0 {
		return 0, 0, false
	}
	j := i
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	if j == len(s) || s[j] != ':' {
		return 0, 0, false
	}
	return i, j, true
}

// checkBox matches a task-list item, "- [ ] text" (also * and +, [x] and [X]), and
// returns the offset of the box's mark.
func checkBox(s string) (int, bool) {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	if i == len(s) || (s[i] != '-' && s[i] != '*' && s[i] != '+') {
		return 0, false
	}
	i++
	j := i
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	if j == i || j+3 > len(s) || s[j] != '[' || s[j+2] != ']' || (s[j+1] != ' ' && s[j+1] != 'x' && s[j+1] != 'X') {
		return 0, false
	}
	if j+3 < len(s) && s[j+3] != ' ' && s[j+3] != '\t' {
		return 0, false
	}
	return j + 1, true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// cutFold cuts prefix from s ignoring case.
func cutFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}
