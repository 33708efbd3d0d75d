package web

import (
	"strings"
	"testing"
)

func TestANSIToHTML(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain <b>&", "plain &lt;b&gt;&amp;"},
		{"\x1b[31mred\x1b[0m ok", `<span class="fc1">red</span> ok`},
		{"\x1b[1;38;5;208mhot\x1b[22m warm\x1b[m", `<span class="fc208 sb">hot</span><span class="fc208"> warm</span>`},
		{"\x1b[38;2;255;0;0mtrue\x1b[0m", `<span class="fc196">true</span>`},
		{"\x1b[7minv\x1b[27m", `<span class="fbg bfg">inv</span>`},
		{"\x1b[44;97mx", `<span class="fc15 bc4">x</span>`},
		{"a\x1b]8;;http://x\x07link\x1b]8;;\x07b", "alinkb"},
		{"\x1b[2J\x1b[Hcleared\x1b(B", "cleared"},
		{"bell\x07 \x9b tab\tend", "bell \uFFFD tab    end"},
		{"c1 \u009b\u0085gone", "c1 gone"},
		{"bad \xff byte", "bad \uFFFD byte"},
		{"\x1b[", ""},
		{"\x1b[38;5mx", "x"},
	}
	for _, c := range cases {
		if got := ANSIToHTML(c.in); got != c.want {
			t.Errorf("ANSIToHTML(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

// FuzzANSIToHTML: whatever an agent prints, the HTML holds no tag but the spans it
// opens and closes itself, every span is closed, and nothing panics.
func FuzzANSIToHTML(f *testing.F) {
	for _, s := range []string{"\x1b[31mred", "<script>alert(1)</script>", "\x1b[38;2;1;2;3m\x1b]0;t\x07x", "\x1b[1;4;7;9;38;5;300m", "\x1bP</span>\x1b\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h := ANSIToHTML(s)
		opens := strings.Count(h, "<span")
		if opens != strings.Count(h, "</span>") {
			t.Fatalf("unbalanced spans in %q", h)
		}
		if strings.Count(h, "<") != 2*opens || strings.Contains(h, "\x1b") {
			t.Fatalf("a tag or an escape of the input's own in %q", h)
		}
	})
}
