package fast

import (
	"bytes"
	"testing"
	"text/tabwriter"
)

// tabwriterOf is text as orcr's tables (text/tabwriter, minwidth 0, tabwidth 0,
// padding 2, padchar ' ', no flags) lay it out, written in the chunks given.
func tabwriterOf(chunks ...[]byte) []byte {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, c := range chunks {
		tw.Write(c)
	}
	tw.Flush()
	return b.Bytes()
}

var tableCases = []string{
	"",
	"id:\tx\npath:\tdemo/a\n",
	"id:\tx\nblocked:\tpermission: Bash(ls)\n\tDo you want to proceed?\n\t  1. Yes  [key 1, allow_once]\nprovider:\tclaude\n",
	"a:\tb\tc\nlonger key:\td\te\tf\n\tg\n",
	"error:\tline one\nline two\ncreated:\tnow\n",
	"k:\tv\fk2345678:\tv\n",
	"k:\tv\vw\nkk:\tx\n",
	"no newline at the end:\tv",
	"é:\tü\nlonger:\tv\n",
	"a\t\t\tb\n\t\tc\n",
	"x\n\n\ty\n",
}

func TestTableIsTabwriter(t *testing.T) {
	for _, s := range tableCases {
		want := tabwriterOf([]byte(s))
		var got bytes.Buffer
		tb := &table{w: &got}
		tb.Write([]byte(s))
		tb.Flush()
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%q:\n got %q\nwant %q", s, got.Bytes(), want)
		}
	}
}

// FuzzTableIsTabwriter: for any text without tabwriter's escape byte (text the fast
// path prints is valid UTF-8 from JSON), table lays it out as text/tabwriter does.
func FuzzTableIsTabwriter(f *testing.F) {
	for _, s := range tableCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		if bytes.IndexByte(s, tabwriter.Escape) >= 0 {
			return // an input outside the property (the escape byte), not a skipped test
		}
		want := tabwriterOf(s)
		var got bytes.Buffer
		tb := &table{w: &got}
		tb.Write(s)
		tb.Flush()
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%q:\n got %q\nwant %q", s, got.Bytes(), want)
		}
	})
}
