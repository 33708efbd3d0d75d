package planning_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/charmbracelet/x/exp/golden"

	"orcr/adapters/prices"
	"orcr/planning"
)

func refs(ms []planning.Model) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Ref()
	}
	return out
}

func mustModel(t *testing.T, c *planning.Catalog, ref string) planning.Model {
	t.Helper()
	m, err := c.Lookup(ref)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestDefaultCatalogCoversProvidersAndIsPriced(t *testing.T) {
	c := planning.Default()
	table := prices.Default()
	for _, p := range planning.KnownProviders {
		n := 0
		for _, m := range c.Models {
			if m.Provider == p {
				n++
			}
		}
		if n == 0 {
			t.Errorf("no model for provider %s", p)
		}
	}
	for _, m := range c.Models {
		// Every default model must be one orcr can price, or its cost would read "unpriced".
		if _, ok := table.Lookup(m.ID); !ok {
			t.Errorf("%s has no row in adapters/prices/prices.json", m.Ref())
		}
		if c.Qualifies(m) == "" {
			t.Errorf("%s qualifies for no tier", m.Ref())
		}
	}
	if len(c.Tiers) != 3 {
		t.Fatalf("tiers %v", c.Tiers)
	}
}

func TestQualifies(t *testing.T) {
	c := planning.Default()
	for ref, want := range map[string]string{
		"claude:claude-opus-5":       "high",
		"claude:claude-opus-5-5":     "high",
		"claude:claude-sonnet-5":     "medium",
		"claude:claude-haiku-4-5":    "small",
		"codex:gpt-5.3-codex":        "medium",
		"pi:anthropic/claude-opus-5": "high",
	} {
		if got := c.Qualifies(mustModel(t, c, ref)); got != want {
			t.Errorf("%s qualifies for %q, want %q", ref, got, want)
		}
	}
	weak := planning.Model{Provider: "claude", ID: "x", Ratings: planning.Ratings{Reasoning: 1, Coding: 1, Architecture: 1, InstructionFollowing: 1, ToolUse: 1, Planning: 1, Speed: 5}, Context: 1000}
	if got := c.Qualifies(weak); got != "" {
		t.Errorf("a model rated 1 qualifies for %q", got)
	}
}

func TestPick(t *testing.T) {
	c := planning.Default()
	all := func(string) bool { return true }
	only := func(ps ...string) func(string) bool {
		return func(p string) bool { return slices.Contains(ps, p) }
	}

	high := refs(c.Pick("high", false, all))
	if want := []string{"claude:claude-opus-5", "pi:anthropic/claude-opus-5"}; !slices.Equal(high, want) {
		t.Errorf("high without premium: %v, want %v", high, want)
	}
	highP := refs(c.Pick("high", true, all))
	// Premium is allowed, not preferred: it comes after the non-premium models of its level.
	if want := []string{"claude:claude-opus-5", "pi:anthropic/claude-opus-5", "codex:gpt-6-sol", "claude:claude-opus-5-5"}; !slices.Equal(highP, want) {
		t.Errorf("high with premium: %v, want %v", highP, want)
	}
	if got := c.Pick("high", false, only("codex")); got != nil {
		t.Errorf("codex has no non-premium high model, got %v", refs(got))
	}
	if got := refs(c.Pick("high", true, only("codex"))); !slices.Equal(got, []string{"codex:gpt-6-sol"}) {
		t.Errorf("codex high with premium: %v", got)
	}

	small := refs(c.Pick("small", false, nil))
	// Right-sized first (the fastest small models), then medium, then high.
	if len(small) < 4 || small[0] != "claude:claude-haiku-4-5" || small[1] != "opencode:anthropic/claude-haiku-4-5" {
		t.Fatalf("small: %v", small)
	}
	level := func(ref string) int { return slices.Index(planning.TierNames, c.Qualifies(mustModel(t, c, ref))) }
	for i := 1; i < len(small); i++ {
		if level(small[i]) < level(small[i-1]) {
			t.Errorf("small: %s (a %s model) after %s", small[i], c.Qualifies(mustModel(t, c, small[i])), small[i-1])
		}
	}
	if slices.Contains(small, "claude:claude-opus-5-5") {
		t.Errorf("premium model picked without permission: %v", small)
	}
	if got := c.Pick("huge", true, nil); got != nil {
		t.Errorf("unknown tier picked %v", refs(got))
	}
}

func TestLookup(t *testing.T) {
	c := planning.Default()
	if m := mustModel(t, c, "claude-opus-5"); m.Provider != "claude" {
		t.Errorf("bare id: %+v", m)
	}
	if _, err := c.Lookup("anthropic/claude-sonnet-5"); err == nil || !strings.Contains(err.Error(), "opencode:anthropic/claude-sonnet-5, pi:anthropic/claude-sonnet-5") {
		t.Errorf("ambiguous id: %v", err)
	}
	if _, err := c.Lookup("claude:gpt-5"); err == nil {
		t.Error("wrong provider found a model")
	}
	if _, err := c.Lookup("nope"); err == nil || !strings.Contains(err.Error(), "orcr catalog") {
		t.Errorf("missing: %v", err)
	}
}

func writeUser(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "catalog.toml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestUserOverrideMerges(t *testing.T) {
	p := writeUser(t, `
# my ratings differ
[tiers.medium]
coding = 5

[[model]]
provider = "claude"
id = "claude-sonnet-5"
speed = 1          # only this changes
premium = true

[[model]]
provider = "codex"
id = "gpt-5"
disabled = true

[[model]]
provider = "opencode"
id = "local/qwen-coder"
reasoning = 3
coding = 4
architecture = 3
instruction_following = 3
tool_use = 4
planning = 3
speed = 5
context = 131072
`)
	c, err := planning.Load(planning.DefaultFS, p)
	if err != nil {
		t.Fatal(err)
	}
	def := planning.Default()
	s := mustModel(t, c, "claude:claude-sonnet-5")
	ds := mustModel(t, def, "claude:claude-sonnet-5")
	want := ds
	want.Speed, want.Premium = 1, true
	if s != want {
		t.Errorf("patched sonnet %+v, want %+v", s, want)
	}
	if _, err := c.Lookup("codex:gpt-5"); err == nil {
		t.Error("disabled model still listed")
	}
	q := mustModel(t, c, "opencode:local/qwen-coder")
	if q.Context != 131072 || q.Coding != 4 || c.Models[len(c.Models)-1] != q {
		t.Errorf("new model %+v (new models go last)", q)
	}
	if len(c.Models) != len(def.Models) {
		t.Errorf("%d models, want %d (one dropped, one added)", len(c.Models), len(def.Models))
	}
	med, _ := c.Tier("medium")
	// A tier table replaces the minimums: reasoning etc. are no longer required.
	if med.Min != (planning.Ratings{Coding: 5}) {
		t.Errorf("medium tier %+v", med)
	}
	high, _ := c.Tier("high")
	dhigh, _ := def.Tier("high")
	if high != dhigh {
		t.Errorf("high tier changed: %+v", high)
	}
	if c.Qualifies(q) != "small" || c.Qualifies(mustModel(t, c, "codex:gpt-5.3-codex")) != "medium" {
		t.Errorf("qualifies after override: qwen %s, gpt-5.3-codex %s", c.Qualifies(q), c.Qualifies(mustModel(t, c, "codex:gpt-5.3-codex")))
	}
}

func TestUserCatalogMissingIsDefault(t *testing.T) {
	c, err := planning.Load(planning.DefaultFS, filepath.Join(t.TempDir(), "none.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Models) != len(planning.Default().Models) {
		t.Fatal("a missing user file changed the catalog")
	}
}

func TestUserCatalogErrors(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string // each a line-numbered message fragment, in order
	}{
		{"syntax", "[[model]]\nprovider = \"claude\"\nid = \n", []string{":3: "}},
		{"unknown key names every line", "[[model]]\nprovider = \"claude\"\nid = \"claude-opus-5\"\ncodng = 4\n\n[[model]]\nprovider = \"codex\"\nid = \"gpt-5\"\ncodng = 3\n",
			[]string{`:4: unknown key "codng" in [[model]]`, `:9: unknown key "codng" in [[model]]`}},
		{"rating out of range", "[[model]]\nprovider = \"claude\"\nid = \"claude-opus-5\"\nspeed = 9\n", []string{":4: model claude:claude-opus-5: speed = 9: ratings are 1 to 5"}},
		{"unknown tier", "[tiers.huge]\ncoding = 3\n", []string{`:1: unknown tier "huge": tiers are small, medium, high`}},
		{"tier minimum out of range", "\n[tiers.small]\ncoding = 0\n", []string{":3: tier small: coding = 0"}},
		{"unknown key in tier", "[tiers.small]\ncodng = 3\n", []string{`:2: unknown key "codng" in [tiers.small]`}},
		{"unknown table", "[models]\nx = 1\n", []string{`:1: unknown key "models"`}},
		// Before the one strict loader a type mismatch had no file:line ("…catalog.toml: toml:
		// line 4 (last key …): incompatible types…") and a key in an inline table no line at all.
		{"wrong type", "[[model]]\nprovider = \"claude\"\nid = \"claude-opus-5\"\nspeed = \"fast\"\n", []string{`:4: model.speed is a string; give an integer`}},
		{"unknown key in an inline tier", "tiers = { small = { coding = 3, codng = 3 } }\n", []string{`:1: unknown key "codng" in [tiers.small]`}},
		{"unknown provider", "[[model]]\nprovider = \"claud\"\nid = \"x\"\n", []string{`:2: unknown provider "claud"`}},
		{"new model incomplete", "\n\n[[model]]\nprovider = \"pi\"\nid = \"x/y\"\ncoding = 3\n", []string{":3: model pi:x/y is new, so it needs every rating and its context; missing: reasoning, architecture"}},
		{"disable an unknown model", "[[model]]\nprovider = \"codex\"\nid = \"gpt-55\"\ndisabled = true\n", []string{":4: model codex:gpt-55 is not in the catalog, so there is nothing to disable"}},
		{"no id", "[[model]]\nprovider = \"pi\"\n", []string{":1: a [[model]] needs provider and id"}},
		{"twice", "[[model]]\nprovider = \"pi\"\nid = \"openai/gpt-5.3-codex\"\nspeed = 2\n[[model]]\nprovider = \"pi\"\nid = \"openai/gpt-5.3-codex\"\n", []string{":5: model pi:openai/gpt-5.3-codex is listed twice in this file (first at line 1)"}},
		{"several at once, by line", "[[model]]\nprovider = \"claude\"\nid = \"claude-opus-5\"\nspeed = 0\n[tiers.small]\ncoding = 6\n[tiers.mega]\n",
			[]string{":4: model claude:claude-opus-5: speed = 0", ":6: tier small: coding = 6", `:7: unknown tier "mega"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeUser(t, tc.body)
			_, err := planning.Load(planning.DefaultFS, p)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			lines := strings.Split(msg, "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("%d errors, want %d:\n%s", len(lines), len(tc.want), msg)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(lines[i], p) || !strings.Contains(lines[i], w) {
					t.Errorf("error %d = %q, want %q after the file name", i, lines[i], w)
				}
			}
		})
	}
}

func TestDefaultCatalogMustBeComplete(t *testing.T) {
	fsys := fstest.MapFS{"catalog.toml": {Data: []byte("[tiers.small]\ncoding = 3\n[[model]]\nprovider = \"claude\"\nid = \"x\"\n")}}
	_, err := planning.Load(fsys, "")
	if err == nil || !strings.Contains(err.Error(), `tier "medium" is not defined`) || !strings.Contains(err.Error(), "catalog.toml:3: model claude:x is new") {
		t.Fatalf("err = %v", err)
	}
}

func TestCatalogTable(t *testing.T) {
	var b bytes.Buffer
	if err := planning.WriteTable(&b, planning.Default()); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.TrimRight(l, " ") != l {
			t.Errorf("trailing space in %q", l)
		}
	}
	golden.RequireEqual(t, b.Bytes())
}
