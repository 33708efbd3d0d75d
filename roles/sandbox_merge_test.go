package roles

import (
	"slices"
	"testing"

	"orcr/core/wire"
)

// The request's sandbox mode wins over the role's (--sandbox=off unconfines a role
// that confines); grants add up when it is on.
func TestMergeSandbox(t *testing.T) {
	role := &wire.Sandbox{Mode: wire.SandboxOn, RW: []string{"~/.cache/go-build"}, Ports: []int{5432}}
	if got := mergeSandbox(nil, role); !got.On() || got.RW[0] != "~/.cache/go-build" || got == role {
		t.Fatalf("role only: %+v", got)
	}
	if got := mergeSandbox(&wire.Sandbox{Mode: wire.SandboxOff}, role); got.On() || len(got.RW) != 0 {
		t.Fatalf("--sandbox=off over the role: %+v", got)
	}
	got := mergeSandbox(&wire.Sandbox{Mode: wire.SandboxOn, RW: []string{"/srv"}, Ports: []int{8080}}, role)
	if !got.On() || !slices.Equal(got.RW, []string{"~/.cache/go-build", "/srv"}) || !slices.Equal(got.Ports, []int{5432, 8080}) {
		t.Fatalf("both: %+v", got)
	}
	if got := mergeSandbox(nil, nil); got != nil {
		t.Fatalf("neither: %+v", got)
	}
}
