package keymaps

import (
	"strings"
	"testing"
)

type press string

func (p press) String() string { return string(p) }

func TestDefaultsValid(t *testing.T) {
	for _, name := range []string{"default", "vim"} {
		k, err := ByName(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := k.Validate(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, s := range k.Sections() {
			for _, b := range s.Bindings {
				if b.Action == "" || len(b.Keys) == 0 || b.Desc == "" {
					t.Errorf("%s: incomplete binding %+v", name, b)
				}
			}
		}
	}
	// j/k/g/G move in both sets, next to the arrows; h/l are vim's only.
	for _, k := range []KeyMap{Default(), Vim()} {
		tr, p := k.Tree, k.Panel
		if !tr.Down.Matches(press("j")) || !tr.Up.Matches(press("k")) || !tr.Top.Matches(press("g")) ||
			!tr.Bottom.Matches(press("G")) || !tr.Down.Matches(press("down")) || !tr.Top.Matches(press("home")) ||
			!p.Down.Matches(press("j")) || !p.Up.Matches(press("k")) {
			t.Errorf("%s: j/k/g/G or the arrows do not move", k.Name)
		}
	}
	if !Vim().Tree.Collapse.Matches(press("h")) || Default().Tree.Collapse.Matches(press("h")) {
		t.Fatal("vim h / default h")
	}
}

func TestDestructiveFlagged(t *testing.T) {
	k := Default()
	if !k.Tree.Kill.Destructive || k.Tree.Spawn.Destructive {
		t.Fatal("kill must be destructive, spawn not")
	}
}

func TestApplyOverrides(t *testing.T) {
	k := Default()
	if err := k.Apply(map[string][]string{"tree.kill": {"ctrl+k"}}); err != nil {
		t.Fatal(err)
	}
	if !k.Tree.Kill.Matches(press("ctrl+k")) || k.Tree.Kill.Matches(press("K")) {
		t.Fatal("override not applied")
	}
	// help is generated from the same data, so it shows the override
	found := false
	for _, s := range k.Sections() {
		for _, b := range s.Bindings {
			if b.Action == "tree.kill" && b.Label() == "ctrl+k" {
				found = true
			}
		}
	}
	if !found {
		t.Fatal("help does not show override")
	}
	k = Default()
	if err := k.Apply(map[string][]string{"tree.nope": {"x"}}); err == nil {
		t.Fatal("unknown action accepted")
	}
	k = Default()
	if err := k.Apply(map[string][]string{"tree.spawn": {"K"}}); err == nil || !strings.Contains(err.Error(), "bound to both") {
		t.Fatalf("collision accepted: %v", err)
	}
	k = Default()
	if err := k.Apply(map[string][]string{"tree.spawn": {"q"}}); err == nil {
		t.Fatal("shadowing global quit accepted")
	}
}
