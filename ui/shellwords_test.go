package ui

import (
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

var wordCases = []struct {
	in   string
	want []string
}{
	{"", nil},
	{"   ", nil},
	{"sh", []string{"sh"}},
	{"sh -c 'echo ok; exec cat'", []string{"sh", "-c", "echo ok; exec cat"}},
	{`python3 -c "print('hi')"`, []string{"python3", "-c", "print('hi')"}},
	{`a\ b c`, []string{"a b", "c"}},
	{`'' x ""`, []string{"", "x", ""}},
	{`pre'quoted'"double"post`, []string{"prequoteddoublepost"}},
	{`"a \" \\ \x"`, []string{`a " \ \x`}},
	{"tab\tsep  two", []string{"tab", "sep", "two"}},
	{"cr\rvt\v", []string{"cr\rvt\v"}},
	{"joined\\\nline", []string{"joinedline"}},
	{`ends\`, []string{`ends\`}},
	{`'it''s'`, []string{"its"}},
	{`"it's"`, []string{"it's"}},
	{`a#b 'c#d' "#e"`, []string{"a#b", "c#d", "#e"}},
	{`'$HOME' '|' \; "&&"`, []string{"$HOME", "|", ";", "&&"}},
	{`*.go ~/x`, []string{"*.go", "~/x"}},
}

func TestSplitWords(t *testing.T) {
	for _, c := range wordCases {
		got, err := splitWords(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("splitWords(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestSplitWordsRefuses(t *testing.T) {
	for _, in := range []string{`'open`, `"open`, `echo $HOME`, "echo `date`", `"$x"`, "a | b", "a; b",
		"a && b", "a > f", "(a)", "a #comment", "a\nb"} {
		if got, err := splitWords(in); err == nil {
			t.Errorf("splitWords(%q) = %q, want an error", in, got)
		} else if !strings.Contains(err.Error(), "quote") {
			t.Errorf("splitWords(%q): error %q does not say what to do", in, err)
		}
	}
}

// TestSplitWordsLikeSh runs the same lines through the real sh and compares the argv it
// builds (in an empty directory, so globs stay as typed).
func TestSplitWordsLikeSh(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal("no sh:", err)
	}
	for _, c := range wordCases {
		if strings.Contains(c.in, "~") {
			continue // sh expands ~; the splitter keeps it (documented)
		}
		// START keeps "no words" apart from "one empty word"; the line ends the script,
		// as a trailing backslash would in the form.
		cmd := exec.Command(sh, "-c", `printf '%s\0' START `+c.in)
		cmd.Dir = t.TempDir()
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("sh on %q: %v", c.in, err)
		}
		fromSh := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		if fromSh[0] != "START" {
			t.Fatalf("sh on %q: %q", c.in, out)
		}
		fromSh = fromSh[1:]
		if len(fromSh) == 0 {
			fromSh = nil
		}
		got, _ := splitWords(c.in)
		if !reflect.DeepEqual(got, fromSh) {
			t.Errorf("%q: splitWords %q, sh %q", c.in, got, fromSh)
		}
	}
}

// quoteWords is the inverse of splitWords for the fuzz round trip: each word in single
// quotes, a single quote written as '\”.
func quoteWords(ws []string) string {
	q := make([]string, len(ws))
	for i, w := range ws {
		q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

func FuzzSplitWords(f *testing.F) {
	for _, c := range wordCases {
		f.Add(c.in)
	}
	f.Add(`"unterminated`)
	f.Fuzz(func(t *testing.T, s string) {
		ws, err := splitWords(s)
		if err != nil {
			return
		}
		// Quoting the words and splitting again gives the same words.
		again, err := splitWords(quoteWords(ws))
		if err != nil || len(again) != len(ws) {
			t.Fatalf("%q → %q → %q (%v)", s, ws, again, err)
		}
		for i := range ws {
			if again[i] != ws[i] {
				t.Fatalf("%q → %q → %q", s, ws, again)
			}
		}
		// A line without quotes, escapes or blanks other than spaces splits like Fields.
		if !strings.ContainsAny(s, "'\"\\\t\n\r\v\f") && isASCII(s) {
			if f := strings.Fields(s); !reflect.DeepEqual(ws, f) && !(len(ws) == 0 && len(f) == 0) {
				t.Fatalf("%q: %q, Fields %q", s, ws, f)
			}
		}
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
