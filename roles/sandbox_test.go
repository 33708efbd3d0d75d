package roles_test

import (
	"strings"
	"testing"

	"orcr/roles"
)

// A role's [sandbox] confines its agents and widens the policy; ".." in a grant, a
// mode other than on/off and a port out of range are refused at their line.
func TestRoleSandbox(t *testing.T) {
	r, err := roles.Parse("coder", "coder.toml", []byte(`providers = ["claude"]
[sandbox]
rw = ["~/.cache/go-build"]
rox = ["/srv/tools"]
ports = [5432]
`), check())
	if err != nil {
		t.Fatal(err)
	}
	if sb := r.Sandbox; sb == nil || !sb.On() || sb.RW[0] != "~/.cache/go-build" || sb.ROX[0] != "/srv/tools" || sb.Ports[0] != 5432 {
		t.Fatalf("sandbox %+v", r.Sandbox)
	}
	off, err := roles.Parse("free", "free.toml", []byte("providers = [\"claude\"]\n[sandbox]\nmode = \"off\"\n"), check())
	if err != nil || off.Sandbox == nil || off.Sandbox.On() {
		t.Fatalf("mode off: %+v %v", off, err)
	}
	for _, c := range []struct{ src, want string }{
		{"[sandbox]\nrw = [\"~/../etc\"]\n", `".." element`},
		{"[sandbox]\nrw = [\"/work/a/../../root\"]\n", `".." element`},
		{"[sandbox]\nmode = \"maybe\"\n", `sandbox mode "maybe"`},
		{"[sandbox]\nports = [70000]\n", "port 70000"},
		{"[sandbox]\nnetwork = true\n", "network"},
	} {
		_, err := roles.Parse("x", "x.toml", []byte("providers = [\"claude\"]\n"+c.src), check())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.src, err, c.want)
		}
	}
}
