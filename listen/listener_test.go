package listen

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// designExample is DESIGN §11's listener, exactly.
const designExample = `interval = "2m"
[source]
type = "github-comments"      # shell | github-issues | github-comments | github-labels | github-pr-reviews
repos = ["owner/repo"]
trigger = "@orcr"               # github-comments: only bodies containing it
authorized_users = ["alice"]    # empty: everyone
# labels = ["orcr"]             # github-issues: only issues carrying these labels
# command = "./new-work.sh"     # shell: the command to run
[action]                      # spawn an agent, or: plan = "{{title}}" to draft a plan
path = "gh/{{repo}}/{{number}}"
role = "implementor"          # or provider/model
prompt = "Issue #{{number}} {{title}}: {{body}}"
[[rate_limits]]
max = 5
per = "1h"
`

func TestParseDesignExample(t *testing.T) {
	path := filepath.Join(t.TempDir(), "triage.toml")
	if err := os.WriteFile(path, []byte(designExample), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if l.Name != "triage" || l.Interval != 2*time.Minute {
		t.Fatalf("name %q interval %s", l.Name, l.Interval)
	}
	s := l.Source
	if s.Type != "github-comments" || len(s.Repos) != 1 || s.Repos[0] != "owner/repo" || s.Trigger != "@orcr" ||
		len(s.AuthorizedUsers) != 1 || s.AuthorizedUsers[0] != "alice" || len(s.Labels) != 0 || s.Command != "" {
		t.Fatalf("source %+v", s)
	}
	a := l.Action
	if a.IsPlan() || a.Role != "implementor" || a.Provider != "" || a.Path.Text != "gh/{{repo}}/{{number}}" {
		t.Fatalf("action %+v", a)
	}
	if len(l.RateLimits) != 1 || l.RateLimits[0].Max != 5 || l.RateLimits[0].Per != time.Hour || l.RateLimits[0].Text != "1h" {
		t.Fatalf("rate limits %+v", l.RateLimits)
	}
	vars := map[string]string{"repo": "Owner/Repo", "number": "42", "title": "Crash on start", "body": "it dies"}
	p, err := a.Path.RenderPath(vars)
	if err != nil || p != "gh/owner/repo/42" {
		t.Fatalf("path %q %v", p, err)
	}
	prompt, err := a.Prompt.Render(vars)
	if err != nil || prompt != "Issue #42 Crash on start: it dies" {
		t.Fatalf("prompt %q %v", prompt, err)
	}
}

func TestParseOtherShapes(t *testing.T) {
	l, err := Parse("nightly", []byte(`
[source]
type = "shell"
command = "./new-work.sh"
timeout = "20s"
[action]
plan = "{{title}}"
repo = "~/src/app"
[[rate_limits]]
max = 3
per = "90m"
[[rate_limits]]
max = 20
per = "day"
`))
	if err != nil {
		t.Fatal(err)
	}
	if l.Interval != DefaultInterval || l.Source.Timeout != 20*time.Second || !l.Action.IsPlan() ||
		len(l.RateLimits) != 2 || l.RateLimits[0].Per != 90*time.Minute || l.RateLimits[1].Per != 24*time.Hour {
		t.Fatalf("%+v", l)
	}
	l, err = Parse("reviews", []byte(`interval = "30s"
[source]
type = "github-pr-reviews"
repos = ["o/r", "o/s"]
states = ["changes_requested"]
[action]
path = "fix/{{repo}}/{{number}}"
provider = "claude"
model = "sonnet"
priority = 5
prompt = "{{user}} asked for changes on {{head}}: {{body}}"
`))
	if err != nil {
		t.Fatal(err)
	}
	if l.Source.States[0] != "CHANGES_REQUESTED" || l.Action.Provider != "claude" || l.Action.Priority != 5 || len(l.RateLimits) != 0 {
		t.Fatalf("%+v", l)
	}
}

func TestParseErrorsNameTheLine(t *testing.T) {
	base := func(src, action, extra string) string {
		return "interval = \"2m\"\n[source]\n" + src + "\n[action]\n" + action + "\n" + extra
	}
	spawn := "path = \"gh/{{repo}}/{{number}}\"\nrole = \"implementor\"\nprompt = \"{{title}}\""
	gh := "type = \"github-issues\"\nrepos = [\"o/r\"]"
	cases := []struct {
		name, doc string
		line      int
		want      string
	}{
		{"unknown source type", base("type = \"gitlab\"\nrepos = [\"o/r\"]", spawn, ""), 3, `unknown source type "gitlab"`},
		{"no source type", base("repos = [\"o/r\"]", spawn, ""), 2, "needs type"},
		{"unknown key in source", base(gh+"\nlabelz = [\"x\"]", spawn, ""), 5, `unknown key "labelz" in [source] (known: type, repos,`},
		{"unknown top-level key", "intervall = \"2m\"\n" + base(gh, spawn, ""), 1, `unknown key "intervall"`},
		{"unknown key in rate_limits", base(gh, spawn, "[[rate_limits]]\nmax = 1\nper = \"1h\"\n[[rate_limits]]\nmax = 2\nper = \"day\"\nburst = 3"), 15, `unknown key "burst" in [[rate_limits]] (known: max, per)`},
		// The line scan before the one strict loader read keys inside a multi-line prompt as
		// keys, so this was blamed on line 9, inside the prompt.
		{"unknown key after a multi-line prompt", base(gh, "path = \"gh/{{repo}}/{{number}}\"\nrole = \"r\"\nprompt = \"\"\"\nrol = 1\n\"\"\"\nrol = \"x\"", ""), 11, `unknown key "rol" in [action]`},
		{"key of another type", base(gh+"\ntrigger = \"@orcr\"", spawn, ""), 5, "trigger does not apply to a github-issues source"},
		{"command on github", base(gh+"\ncommand = \"x\"", spawn, ""), 5, "command does not apply"},
		{"max zero", base(gh, spawn, "[[rate_limits]]\nmax = 0\nper = \"1h\""), 10, "max = 0"},
		{"max negative", base(gh, spawn, "[[rate_limits]]\nmax = -2\nper = \"1h\""), 10, "max = -2"},
		{"per unreadable", base(gh, spawn, "[[rate_limits]]\nmax = 5\nper = \"fortnight\""), 11, `"fortnight" is not a period`},
		{"per bare number", base(gh, spawn, "[[rate_limits]]\nmax = 5\nper = \"90\""), 11, "is not a period"},
		{"per negative", base(gh, spawn, "[[rate_limits]]\nmax = 5\nper = \"-1h\""), 11, "is not a period"},
		{"per missing", base(gh, spawn, "[[rate_limits]]\nmax = 5"), 9, "needs per"},
		{"second limit bad", base(gh, spawn, "[[rate_limits]]\nmax = 5\nper = \"1h\"\n[[rate_limits]]\nmax = 5\nper = \"1x\""), 14, `"1x" is not a period`},
		{"max wrong type", base(gh, spawn, "[[rate_limits]]\nmax = \"five\"\nper = \"1h\""), 10, "max"},
		{"template unknown var", base(gh, "path = \"gh/{{repo}}/{{numbr}}\"\nrole = \"r\"\nprompt = \"x\"", ""), 6, "{{numbr}}, which this source does not set"},
		{"prompt unknown var", base(gh, "path = \"gh/{{repo}}\"\nrole = \"r\"\nprompt = \"{{label}}\"", ""), 8, "{{label}}"},
		{"unclosed template", base(gh, "path = \"gh/{{repo\"\nrole = \"r\"\nprompt = \"x\"", ""), 6, "never closed"},
		{"role and provider", base(gh, spawn+"\nprovider = \"claude\"", ""), 9, "role or provider/model, not both"},
		{"plan with path", base(gh, "plan = \"{{title}}\"\npath = \"x\"", ""), 7, "plan drafts a plan"},
		{"no action", "[source]\n" + gh, 0, "an [action] is needed"},
		{"no repos", base("type = \"github-comments\"", spawn, ""), 2, "needs repos"},
		{"bad repo", base("type = \"github-issues\"\nrepos = [\"justaname\"]", spawn, ""), 4, `repo "justaname"`},
		{"shell without command", base("type = \"shell\"", "path = \"x/{{id}}\"\nrole = \"r\"\nprompt = \"{{line}}\"", ""), 2, "needs command"},
		{"interval unreadable", strings.Replace(base(gh, spawn, ""), `"2m"`, `"soon"`, 1), 1, "interval"},
		{"interval too short", strings.Replace(base(gh, spawn, ""), `"2m"`, `"10ms"`, 1), 1, "under the minimum"},
		{"toml syntax", base(gh, spawn, "[[rate_limits]\nmax = 1"), 10, ""},
		{"bad review state", base("type = \"github-pr-reviews\"\nrepos = [\"o/r\"]\nstates = [\"merged\"]", spawn, ""), 5, `review state "merged"`},
		{"priority out of range", base(gh, spawn+"\npriority = 5000", ""), 9, "priority 5000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("x", []byte(c.doc))
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("want a ParseError, got %v\n%s", err, c.doc)
			}
			if pe.Line != c.line || !strings.Contains(pe.Msg, c.want) {
				t.Fatalf("got line %d %q, want line %d containing %q\n%s", pe.Line, pe.Msg, c.line, c.want, numbered(c.doc))
			}
		})
	}
}

func numbered(s string) string {
	var b strings.Builder
	for i, l := range strings.Split(s, "\n") {
		fmt.Fprintf(&b, "%3d %s\n", i+1, l)
	}
	return b.String()
}

func TestHostileShapesAreRefusedFast(t *testing.T) {
	cases := map[string]int{
		strings.Repeat("x.", 20000) + "y = 1":                                       1,
		"a = " + strings.Repeat("{b = ", 3000) + "1" + strings.Repeat("}", 3000):    1,
		"\n\n[" + strings.Repeat("x.", 3000) + "y]":                                 3,
		"a = [" + strings.Repeat("{b = [", 2000) + strings.Repeat("]}", 2000) + "]": 1,
		strings.Repeat("# padding\n", 7000):                                         0,
	}
	for doc, line := range cases {
		start := time.Now()
		_, err := Parse("x", []byte(doc))
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Line != line || time.Since(start) > 100*time.Millisecond {
			t.Errorf("%.30q…: %v after %s", doc, err, time.Since(start))
		}
	}
	// Strings and comments are not shape: templates and dotted text still parse.
	doc := designExample + "# a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s\n"
	doc = strings.Replace(doc, `prompt = "Issue #{{number}} {{title}}: {{body}}"`,
		`prompt = """{{title}} {{body}} {{number}} {{repo}} {{url}} {{user}} see a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t [[[[[[[[[[[[[[[[[[[["""`, 1)
	if _, err := Parse("x", []byte(doc)); err != nil {
		t.Fatal(err)
	}
}

func TestParseShellTemplatesAreOpen(t *testing.T) {
	// A shell source's JSON may carry any field, so the load cannot refuse {{anything}};
	// the dispatch does, for an event that lacks it.
	l, err := Parse("sh", []byte("[source]\ntype = \"shell\"\ncommand = \"echo\"\n[action]\npath = \"w/{{ticket}}\"\nrole = \"r\"\nprompt = \"{{summary}}\""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Action.Path.RenderPath(map[string]string{"id": "1"}); err == nil {
		t.Fatal("rendering a missing var succeeded")
	}
}

func TestBadNames(t *testing.T) {
	for _, n := range []string{"", "Triage", "-x", "a/b", strings.Repeat("a", 65)} {
		if _, err := Parse(n, []byte(designExample)); err == nil {
			t.Errorf("name %q accepted", n)
		}
	}
}

func TestParsePeriod(t *testing.T) {
	good := map[string]time.Duration{
		"1h": time.Hour, "90m": 90 * time.Minute, "30s": 30 * time.Second, "day": 24 * time.Hour,
		"Day": 24 * time.Hour, "hour": time.Hour, "2 hours": 2 * time.Hour, "1 day": 24 * time.Hour,
		"week": 7 * 24 * time.Hour, "2d": 48 * time.Hour, "1d12h": 36 * time.Hour, "1w": 7 * 24 * time.Hour,
		"1h30m": 90 * time.Minute, " 5m ": 5 * time.Minute,
	}
	for in, want := range good {
		got, err := ParsePeriod(in)
		if err != nil || got != want {
			t.Errorf("ParsePeriod(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "fortnight", "1x", "-1h", "0s", "0", "90", "h", "1 fortnight", "0 days", "-2 days", "1.5", "d1", "1h-5m"} {
		if d, err := ParsePeriod(in); err == nil {
			t.Errorf("ParsePeriod(%q) = %s, want an error", in, d)
		}
	}
	for d, want := range map[time.Duration]string{time.Hour: "1h", 90 * time.Minute: "90m", 48 * time.Hour: "2d", 90 * time.Second: "1m30s"} {
		if got := FormatPeriod(d); got != want {
			t.Errorf("FormatPeriod(%s) = %q, want %q", d, got, want)
		}
	}
}

// FuzzParse: any document either parses or is refused with a ParseError; none panics.
func FuzzParse(f *testing.F) {
	f.Add([]byte(designExample))
	f.Add([]byte("[source]\ntype = \"shell\"\ncommand = \"x\"\n[action]\nplan = \"{{title}}\"\n[[rate_limits]]\nmax = 1\nper = \"2 days\""))
	f.Add([]byte("[[rate_limits]]\n[[rate_limits]]\nmax = 1"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		l, err := Parse("fuzz", doc)
		var pe *ParseError
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("not a ParseError: %v", err)
		}
		if err == nil {
			for _, r := range l.RateLimits {
				if r.Max < 1 || r.Per < time.Second {
					t.Fatalf("accepted limit %+v", r)
				}
			}
		}
	})
}

func TestLoadDir(t *testing.T) {
	dir := t.TempDir()
	write := func(name, doc string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("triage.toml", designExample)
	write("broken.toml", "interval = \"2m\"\n[source]\ntype = \"gitlab\"\n")
	write("notes.txt", "ignored")
	write(".hidden.toml", "ignored")
	got, err := LoadDir(dir, nil)
	if err != nil || len(got) != 2 {
		t.Fatalf("%v %v", got, err)
	}
	if got["triage"].Err != nil || got["triage"].Listener.Source.Trigger != "@orcr" {
		t.Fatalf("triage: %+v", got["triage"])
	}
	var pe *ParseError
	if !errors.As(got["broken"].Err, &pe) || pe.Line != 3 || !strings.Contains(pe.Error(), "broken.toml") {
		t.Fatalf("broken: %v", got["broken"].Err)
	}
	// Unchanged files are reused; a changed one is read again; a removed one is gone.
	again, _ := LoadDir(dir, got)
	if again["triage"].ModTime != got["triage"].ModTime {
		t.Fatal("unchanged file re-read")
	}
	write("broken.toml", strings.Replace(designExample, `"2m"`, `"5m"`, 1))
	_ = os.Remove(filepath.Join(dir, "triage.toml"))
	again, _ = LoadDir(dir, again)
	if len(again) != 1 || again["broken"].Err != nil || again["broken"].Listener.Interval != 5*time.Minute {
		t.Fatalf("after edits: %+v", again)
	}
	if none, err := LoadDir(filepath.Join(dir, "missing"), nil); err != nil || len(none) != 0 {
		t.Fatalf("missing dir: %v %v", none, err)
	}
}
