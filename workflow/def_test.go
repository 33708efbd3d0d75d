package workflow

import (
	"strings"
	"testing"
)

// issueExample is the workflow of issue 26 (triage → fix).
const issueExample = `[vars]
label = "bug"
[[steps]]
name = "pick"
role = "triager"
prompt = "List open issues labelled {{vars.label}} worth fixing tonight."
outputs = { issues = "list", count = "int" }
[[steps]]
name = "fix"
for_each = "steps.pick.issues"
when = "steps.pick.count > 0"
role = "implementor"
identity = "maintainer"
prompt = "Fix {{item}}."
`

func TestIssueExampleParses(t *testing.T) {
	d, err := Parse("triage", "triage.toml", []byte(issueExample))
	if err != nil {
		t.Fatal(err)
	}
	fix, _ := d.Step("fix")
	if len(d.Steps) != 2 || fix.Identity != "maintainer" || strings.Join(fix.Needs, ",") != "pick" || fix.MaxParallel != DefaultParallel ||
		fix.OnFailure != "stop" || d.Vars["label"] != "bug" || d.MaxItems != DefaultMaxItems {
		t.Fatalf("parsed %+v", d)
	}
}

// TestBadFilesAreRefusedByLine holds every kind of bad file to one message at its
// line, all of them at once.
func TestBadFilesAreRefusedByLine(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string // each a substring of the error
	}{
		{"unknown step key", "[[steps]]\nname = \"a\"\nprovider = \"shell\"\nargv = [\"true\"]\ncolour = \"red\"\n", []string{"w.toml:5", "colour"}},
		{"unknown top key", "nonsense = 1\n[[steps]]\nname = \"a\"\nprovider = \"shell\"\nargv = [\"true\"]\n", []string{"w.toml:1", "nonsense"}},
		{"bad expression", "[[steps]]\nname = \"a\"\nprovider = \"shell\"\nargv = [\"true\"]\nwhen = \"1 +\"\n", []string{"w.toml:5", "when"}},
		{"undeclared output", "[[steps]]\nname = \"a\"\nprovider = \"shell\"\nargv = [\"true\"]\noutputs = { n = \"int\" }\n[[steps]]\nname = \"b\"\nprovider = \"shell\"\nargv = [\"echo\", \"{{steps.a.m}}\"]\n",
			[]string{"w.toml:9", `declares no output "m"`}},
		{"undeclared output in when", "[[steps]]\nname = \"a\"\nprovider = \"shell\"\nargv = [\"true\"]\n[[steps]]\nname = \"b\"\nprovider = \"shell\"\nargv = [\"true\"]\nwhen = \"steps.a.count > 1\"\n",
			[]string{"w.toml:9", `declares no output "count"`}},
		{"unknown step", "[[steps]]\nname = \"a\"\nprovider = \"shell\"\nargv = [\"true\"]\nwhen = \"steps.zz.n > 1\"\n", []string{"w.toml:5", `no step named "zz"`}},
		{"undeclared var", "[[steps]]\nname = \"a\"\nprovider = \"shell\"\nargv = [\"echo\", \"{{vars.who}}\"]\n", []string{"w.toml:4", "vars.who is not declared"}},
		{"item outside for_each", "[[steps]]\nname = \"a\"\nprovider = \"shell\"\nargv = [\"echo\", \"{{item}}\"]\n", []string{"w.toml:4", "item"}},
		{"bad placeholder", "[[steps]]\nname = \"a\"\nprovider = \"shell\"\nargv = [\"echo\", \"{{ 1 + 2 }}\"]\n", []string{"w.toml:4", "bad placeholder"}},
		{"cycle", "[[steps]]\nname = \"a\"\nprovider = \"shell\"\nargv = [\"echo\", \"{{steps.b.x}}\"]\noutputs = { x = \"string\" }\n[[steps]]\nname = \"b\"\nprovider = \"shell\"\nargv = [\"echo\", \"{{steps.a.x}}\"]\noutputs = { x = \"string\" }\n",
			[]string{"cycle: a → b → a"}},
		{"self", "[[steps]]\nname = \"a\"\nprovider = \"shell\"\nargv = [\"echo\", \"{{steps.a.x}}\"]\noutputs = { x = \"string\" }\n", []string{"reads its own outputs"}},
		{"bad type", "[[steps]]\nname = \"a\"\nprovider = \"shell\"\nargv = [\"true\"]\noutputs = { x = \"number\" }\n", []string{"w.toml:5", "a type is one of"}},
		{"no kind", "[[steps]]\nname = \"a\"\nprompt = \"hi\"\n", []string{"w.toml:1", "needs role"}},
		{"shell without argv", "[[steps]]\nname = \"a\"\nprovider = \"shell\"\n", []string{"needs argv"}},
		{"bad on_failure", "[[steps]]\nname = \"a\"\nprovider = \"shell\"\nargv = [\"true\"]\non_failure = \"retry\"\n", []string{"w.toml:5", "on_failure"}},
		{"max_items over", "max_items = 1000000\n[[steps]]\nname = \"a\"\nprovider = \"shell\"\nargv = [\"true\"]\n", []string{"w.toml:1", "max_items"}},
		{"dup step", "[[steps]]\nname = \"a\"\nprovider = \"shell\"\nargv = [\"true\"]\n[[steps]]\nname = \"a\"\nprovider = \"shell\"\nargv = [\"true\"]\n", []string{"w.toml:6", "named twice"}},
		{"no steps", "[vars]\nx = \"1\"\n", []string{"at least one"}},
		{"unknown name in expression", "[[steps]]\nname = \"a\"\nprovider = \"shell\"\nargv = [\"true\"]\nwhen = \"foo > 1\"\n", []string{"w.toml:5", "foo"}},
		{"after unknown", "[[steps]]\nname = \"a\"\nprovider = \"shell\"\nargv = [\"true\"]\nafter = [\"zz\"]\n", []string{"w.toml:5", `no step named "zz"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("w", "w.toml", []byte(c.src))
			if err == nil {
				t.Fatalf("accepted:\n%s", c.src)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestAfterOrdersSteps(t *testing.T) {
	d, err := Parse("w", "w.toml", []byte("[[steps]]\nname = \"a\"\nprovider = \"shell\"\nargv = [\"true\"]\n[[steps]]\nname = \"b\"\nprovider = \"shell\"\nargv = [\"true\"]\nafter = [\"a\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := d.Step("b"); strings.Join(b.Needs, ",") != "a" {
		t.Fatalf("b needs %v", b.Needs)
	}
}

// FuzzParse holds the loader to an answer on any input: a Def or an error, never a
// panic or a hang.
func FuzzParse(f *testing.F) {
	f.Add([]byte(issueExample))
	f.Add([]byte("[[steps]]\nname = \"a\"\nprovider = \"shell\"\nargv = [\"echo\", \"{{steps.b.x}}\"]\nwhen = \"len(1..3) > 2\"\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		d, err := Parse("w", "w.toml", src)
		if err == nil && len(d.Steps) == 0 {
			t.Fatal("a workflow without steps was accepted")
		}
	})
}
