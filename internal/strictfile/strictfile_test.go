package strictfile

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"orcr/internal/regfile"
)

type item struct {
	ID string `toml:"id,required"`
	V  int    `toml:"v"`
}

type testDoc struct {
	Name  string `toml:"name"`
	N     int    `toml:"n"`
	Table struct {
		A   string `toml:"a"`
		Sub struct {
			B int `toml:"b"`
		} `toml:"sub"`
	} `toml:"table"`
	Item []item            `toml:"item"`
	Env  map[string]string `toml:"env"`
	Opt  *struct {
		X bool `toml:"x"`
	} `toml:"opt"`
	Hidden string `toml:"-"`
}

func TestDecode(t *testing.T) {
	for _, c := range []struct {
		name, doc string
		want      []string // each error, in order; nil: no error
	}{
		{"empty file", "", nil},
		{"comments only", "# nothing\n\n", nil},
		{"everything known", "name = \"x\"\nn = 2\n[table]\na = \"y\"\n[table.sub]\nb = 3\n[[item]]\nid = \"i\"\n[env]\nANY = \"v\"\n[opt]\nx = true\n", nil},
		{"unknown key at the top", "name = \"x\"\n\nnmae = \"y\"\n",
			[]string{`f.toml:3: unknown key "nmae" (known: name, n, table, item, env, opt)`}},
		{"unknown key in a nested table", "[table]\na = \"y\"\n[table.sub]\nb = 1\nc = 2\n",
			[]string{`f.toml:5: unknown key "c" in [table.sub] (known: b)`}},
		{"unknown key inside a table, not its header", "[table]\n\na = \"y\"\nsub.bb = 2\n",
			[]string{`f.toml:4: unknown key "bb" in [table.sub] (known: b)`}},
		{"every element of an array of tables", "[[item]]\nid = \"a\"\nvv = 1\n\n[[item]]\nid = \"b\"\n\n# c\nvv = 2\n",
			[]string{`f.toml:3: unknown key "vv" in [[item]] (known: id, v)`, `f.toml:9: unknown key "vv" in [[item]] (known: id, v)`}},
		{"an unknown table is named once", "[tabel]\na = 1\nb = 2\n",
			[]string{`f.toml:1: unknown key "tabel"`}},
		{"inline tables", "table = { a = \"x\", z = 1 }\nitem = [\n  { id = \"a\" },\n  { id = \"b\", w = 2 },\n]\n",
			[]string{`f.toml:1: unknown key "z" in [table]`, `f.toml:4: unknown key "w" in [[item]]`}},
		{"quoted and dotted keys", "\"na me\" = 1\ntable.'q.k' = 2\n",
			[]string{`f.toml:1: unknown key "\"na me\""`, `f.toml:2: unknown key "\"q.k\"" in [table]`}},
		{"multi-line strings do not shift lines", "name = \"\"\"\nzz = 1\n[fake]\n\"\"\"\nzz = 2\n",
			[]string{`f.toml:5: unknown key "zz"`}},
		{"type mismatch names the line", "name = \"x\"\n\nn = \"three\"\n",
			[]string{`f.toml:3: n is a string; give an integer`}},
		{"type mismatch in a table", "[table]\na = 5\n",
			[]string{`f.toml:2: table.a is an integer; give a string in quotes`}},
		{"type mismatch in the first of an array of tables", "[[item]]\nid = \"a\"\nv = \"x\"\n[[item]]\nid = \"b\"\nv = 2\n",
			[]string{`f.toml:3: item.v is a string; give an integer`}},
		{"a value where a table goes", "table = 3\n",
			[]string{`f.toml:1: table is an integer; give a table`}},
		{"syntax error", "name = \"x\"\nn = = 2\n", []string{`f.toml:2: `}},
		{"missing required key", "[[item]]\nv = 1\n\n[[item]]\nid = \"b\"\n",
			[]string{`f.toml:1: missing key "id" in [[item]]`}},
		{"required in inline array", "item = [{ id = \"a\" }, { v = 2 }]\n",
			[]string{`f.toml:1: missing key "id" in [[item]]`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var v testDoc
			_, err := Decode("f.toml", []byte(c.doc), &v)
			if c.want == nil {
				if err != nil {
					t.Fatalf("want no error, got %v", err)
				}
				return
			}
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("want Errors, got %T %v", err, err)
			}
			if len(es) != len(c.want) {
				t.Fatalf("want %d errors, got %d:\n%v", len(c.want), len(es), err)
			}
			for i, w := range c.want {
				if !strings.HasPrefix(es[i].Error(), w) {
					t.Errorf("error %d:\n got %s\nwant %s…", i, es[i], w)
				}
			}
			var one *Error
			if !errors.As(err, &one) || one.File != "f.toml" || one.Line == 0 {
				t.Errorf("errors.As(*Error): %+v", one)
			}
		})
	}
}

// TestDocAddsTheCallersProblems: the caller's checks land beside the loader's, sorted.
func TestDocAddsTheCallersProblems(t *testing.T) {
	var v testDoc
	d, err := Decode("f.toml", []byte("n = 1\n[[item]]\nid = \"a\"\n[[item]]\nid = \"b\"\nv = -1\nbad = 2\n"), &v)
	if d == nil || err == nil {
		t.Fatalf("want a Doc and the unknown key, got %v, %v", d, err)
	}
	d.Add("item[1].v", "v must not be negative")
	d.Add("n", "n is odd")
	d.Add("item[1].nothere", "falls back to its table")
	got := d.Err().Error()
	want := "f.toml:1: n is odd\nf.toml:4: falls back to its table\nf.toml:6: v must not be negative\nf.toml:7: unknown key \"bad\" in [[item]] (known: id, v)"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if !d.IsDefined("n") || d.IsDefined("name") {
		t.Fatal("IsDefined")
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := write("ok.toml", "name = \"x\"\n")
	var v testDoc
	if _, err := Load(context.Background(), ok, 0, &v); err != nil || v.Name != "x" {
		t.Fatalf("load: %v %+v", err, v)
	}
	if _, err := Load(context.Background(), filepath.Join(dir, "none.toml"), 0, &v); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing file: %v", err)
	}
	big := write("big.toml", "name = \""+strings.Repeat("x", 100)+"\"\n")
	_, err := Load(context.Background(), big, 64, &v)
	if !errors.Is(err, regfile.ErrTooLarge) || !strings.HasPrefix(err.Error(), big+" is larger than 64 bytes") {
		t.Fatalf("a file over the bound: %v", err)
	}
	fifo := filepath.Join(dir, "fifo.toml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, dir} {
		_, err := Load(context.Background(), p, 0, &v)
		if !errors.Is(err, regfile.ErrNotRegular) || !strings.HasPrefix(err.Error(), p+" is not a regular file (it is a") {
			t.Fatalf("%s: %v", p, err)
		}
	}
	bad := write("bad.toml", "\n\nn = true\n")
	if _, err := Load(context.Background(), bad, 0, &v); err == nil || err.Error() != bad+":3: n is a boolean; give an integer" {
		t.Fatalf("type error: %v", err)
	}
}

// FuzzStrictLoad: any document decodes, or fails with Errors whose every entry names the
// file and a line inside it (or none); the line scan never panics or runs away. Seeds are
// the repository's own TOML: the embedded catalog and the README's examples.
func FuzzStrictLoad(f *testing.F) {
	if b, err := os.ReadFile("../../planning/catalog.toml"); err == nil {
		f.Add(b)
	}
	if b, err := os.ReadFile("../../README.md"); err == nil {
		for _, m := range regexp.MustCompile("(?s)```toml\n(.*?)```").FindAllSubmatch(b, -1) {
			f.Add(m[1])
		}
	}
	for _, s := range []string{"", "name = \"x\"\n[[item]]\nid = \"a\"\nzz = 1\n", "table = { a = \"x\", sub = { b = 1 } }\n",
		"item = [{ id = \"a\" }, { v = 2 }]\n", "n = \"\"\"\n\\\"\"\"\"\"\n", "[a.\"b.c\".'d']\nx = 1979-05-27 07:32:00Z\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if len(doc) > 4<<10 {
			return // the decoder is quadratic in nesting; size is the callers' bound
		}
		lines := strings.Count(string(doc), "\n") + 1
		var v testDoc
		d, err := Decode("f.toml", doc, &v)
		if err == nil {
			if d == nil {
				t.Fatal("no error and no Doc")
			}
			return
		}
		var es Errors
		if !errors.As(err, &es) || len(es) == 0 {
			t.Fatalf("not Errors: %T %v", err, err)
		}
		src := strings.Split(string(doc), "\n")
		for _, e := range es {
			if e.File != "f.toml" || e.Line < 0 || e.Line > lines || e.Msg == "" {
				t.Fatalf("bad error %+v for\n%q", e, doc)
			}
			// An unknown key is named at a line that holds it (when its name is bare, so
			// the file spells it as the message does).
			if name, ok := unknownName(e.Msg); ok && e.Line > 0 && !strings.Contains(src[e.Line-1], name) {
				t.Fatalf("%s: line %d is %q\n%q", e.Msg, e.Line, src[e.Line-1], doc)
			}
		}
		var m map[string]any
		Decode("f.toml", doc, &m)
	})
}

// unknownName is the bare key an "unknown key" message names.
func unknownName(msg string) (string, bool) {
	rest, ok := strings.CutPrefix(msg, `unknown key "`)
	if !ok {
		return "", false
	}
	name, _, ok := strings.Cut(rest, `"`)
	if !ok || name == "" || strings.ContainsAny(name, `\'"`) {
		return "", false
	}
	return name, true
}
