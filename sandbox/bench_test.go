package sandbox

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"orcr/core"
	"orcr/core/wire"
	"orcr/sandbox/confine"
)

// BenchmarkWrapLaunch is the server's share of a confined spawn: the policy built
// (paths resolved, the git dir found) and written beside the agent's state.
func BenchmarkWrapLaunch(b *testing.B) {
	if _, err := confine.KernelABI(); err != nil {
		b.Skipf("no Landlock: %v", err)
	}
	root := b.TempDir()
	f := New(Options{Home: filepath.Join(root, "orcr"), Self: "/usr/bin/true", Socket: filepath.Join(root, "orcr", "orcr.sock")})
	cwd := b.TempDir()
	n := 0
	for b.Loop() {
		n++
		spec := &core.LaunchSpec{Argv: []string{"sh"}, Cwd: cwd, Env: []string{"HOME=/root", "PATH=/usr/bin:/bin"}}
		a := wire.Agent{ID: fmt.Sprint(n), Path: "a", Cwd: cwd, Sandbox: &wire.Sandbox{Mode: wire.SandboxOn}}
		if _, err := f.WrapLaunch(context.Background(), a, spec, core.Confinement{}); err != nil {
			b.Fatal(err)
		}
	}
}
