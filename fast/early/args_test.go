package early

import (
	"errors"
	"strings"
	"testing"
)

func env(kv ...string) func(string) string {
	return func(k string) string {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == k {
				return kv[i+1]
			}
		}
		return ""
	}
}

func wd() (string, error) { return "/home/u/work", nil }

// FuzzParse: Parse never panics, and what it claims is one of its two forms with a
// target or path no parser reads as a flag (cli's FuzzFastParseAgreesWithCLI holds it
// to urfave/cli's parse of the same line).
func FuzzParse(f *testing.F) {
	for _, s := range []string{"get\x00x", "get\x00--json\x00x", "run\x00p\x00--\x00sh\x00-c\x00x", "run\x00--env\x00A=1\x00p",
		"run\x00--priority\x00-3\x00p", "run\x00--cwd\x00..\x00p", "get\x00 -x", "run\x00--keep\x00--json\x00p\x00a", "ls", "ls\x00x/*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := append([]string{"orcr", "agent"}, strings.Split(s, "\x00")...)
		c, ok := Parse(args, env(), wd)
		if !ok {
			return
		}
		switch {
		case c.Method == "agent.get" && c.Get != nil && c.Run == nil && c.List == nil:
			if !plainWord(c.Get.Target) {
				t.Fatalf("%q: target %q", args, c.Get.Target)
			}
		case c.Method == "agent.run" && c.Run != nil && c.Get == nil && c.List == nil:
			if !plainWord(c.Run.Path) || c.Run.Cwd == "" {
				t.Fatalf("%q: path %q cwd %q", args, c.Run.Path, c.Run.Cwd)
			}
		case c.Method == "agent.list" && c.List != nil && c.Get == nil && c.Run == nil:
			if c.List.Glob != "" && !plainWord(c.List.Glob) || !c.List.Table || c.List.Limit != listPage {
				t.Fatalf("%q: %+v", args, *c.List)
			}
		default:
			t.Fatalf("%q: %+v", args, c)
		}
	})
}

func TestParseCwd(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  func(string) string
		want string
	}{
		{[]string{"p"}, env(), "/home/u/work"},
		{[]string{"p"}, env("ORCR_ID", "x"), ""},
		{[]string{"--cwd", "..", "p"}, env("ORCR_ID", "x"), "/home/u"},
		{[]string{"--cwd=/a//b/./c/", "p"}, env(), "/a/b/c"},
		{[]string{"--cwd", "", "p"}, env(), "/home/u/work"},
	} {
		c, ok := Parse(append([]string{"orcr", "agent", "run"}, tc.args...), tc.env, wd)
		if !ok || c.Run.Cwd != tc.want {
			t.Errorf("%q: ok %v cwd %q, want %q", tc.args, ok, c.Run.Cwd, tc.want)
		}
	}
	if _, ok := Parse([]string{"orcr", "agent", "run", "--cwd", "x", "p"}, env(), func() (string, error) { return "", errors.New("gone") }); ok {
		t.Error("a relative --cwd without a working directory is claimed")
	}
}
