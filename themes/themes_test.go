package themes

import (
	"strings"
	"testing"
)

func TestResolveBuiltins(t *testing.T) {
	for _, n := range BuiltinNames {
		p, err := Resolve(n, nil)
		if err != nil || p.Name != n {
			t.Fatalf("Resolve(%q) = %v, %v", n, p.Name, err)
		}
		for _, tok := range Tokens {
			if *p.slot(tok) == "" {
				t.Errorf("%s: token %s empty", n, tok)
			}
		}
		s := Build(p)
		if s.Blocked.Render("x") == s.Done.Render("x") {
			t.Errorf("%s: blocked and done render alike", n)
		}
	}
}

func TestUserTheme(t *testing.T) {
	user := map[string]map[string]string{"mine": {"base": "light", "accent": "#123456"}}
	p, err := Resolve("mine", user)
	if err != nil {
		t.Fatal(err)
	}
	if p.Accent != "#123456" || p.Fg != Light().Fg {
		t.Fatalf("got %+v", p)
	}
	if got := Names(user); strings.Join(got, ",") != "dark,light,high-contrast,mine" {
		t.Fatalf("Names = %v", got)
	}
	if _, err := FromTokens("bad", map[string]string{"acent": "#000000"}); err == nil || !strings.Contains(err.Error(), "unknown token") {
		t.Fatalf("typo not reported: %v", err)
	}
	if _, err := FromTokens("bad", map[string]string{"accent": "blue"}); err == nil {
		t.Fatal("bad colour accepted")
	}
	if _, err := Resolve("nope", user); err == nil {
		t.Fatal("unknown theme accepted")
	}
}
