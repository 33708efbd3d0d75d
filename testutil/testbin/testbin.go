// Package testbin builds the repository's programs (the orcr binary, the fake agent)
// for tests that run them as real processes. Each package is built at most once per
// test binary; every test binary rebuilds, so a test never runs a stale program (the
// Go build cache keeps that cheap).
package testbin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// build is one package's build, done once.
type build struct {
	once sync.Once
	path string
	err  error
}

var (
	mu     sync.Mutex
	builds = map[string]*build{}
)

// Build go-builds the main package pkg (an import path such as "orcr" or
// "orcr/testutil/fakeagent") and returns the path of the binary. The first call for a
// pkg builds it; later calls, from any test of the same binary, reuse the result.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	return BuildStamped(t, pkg)
}

// BuildStamped is Build with -ldflags "-X name=value" for each stamp, as a release of
// another version or wire protocol would be built ("orcr/internal/buildinfo.stamp=
// v0.0.1-old"). Each set of stamps is built once per test binary, like Build: the
// nodes tests used the same two stamped builds in four tests, a link of orcr each
// (10-15 s at a load of 20).
func BuildStamped(t testing.TB, pkg string, stamps ...string) string {
	t.Helper()
	var flags []string
	for _, s := range stamps {
		flags = append(flags, "-X "+s)
	}
	ldflags := strings.Join(flags, " ")
	key := pkg + "\x00" + ldflags
	mu.Lock()
	b, ok := builds[key]
	if !ok {
		b = &build{}
		builds[key] = b
	}
	mu.Unlock()
	b.once.Do(func() { b.path, b.err = goBuild(pkg, ldflags) })
	if b.err != nil {
		t.Fatalf("testbin: %v", b.err)
	}
	return b.path
}

// goBuild builds pkg (with ldflags, if any) into a per-user directory keyed by the
// module root, package and flags, writing a temporary file and renaming it so
// concurrent test binaries (and programs still running from an earlier build) never
// see a half-written file.
func goBuild(pkg, ldflags string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	key := root + "\x00" + pkg
	if ldflags != "" {
		key += "\x00" + ldflags // a plain build keeps the directory it always had
	}
	sum := sha256.Sum256([]byte(key))
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("orcr-testbin-%d", os.Getuid()), hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("build %s: %w", pkg, err)
	}
	out := filepath.Join(dir, filepath.Base(pkg))
	tmp, err := os.CreateTemp(dir, ".build-*")
	if err != nil {
		return "", fmt.Errorf("build %s: %w", pkg, err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	var stderr bytes.Buffer
	args := []string{"build", "-o", tmp.Name()}
	if ldflags != "" {
		args = append(args, "-ldflags", ldflags)
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = root
	// Built as the README says: static, like a release binary (no dynamic loader at
	// every start; orcr needs no cgo).
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, stderr.String())
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return "", fmt.Errorf("build %s: %w", pkg, err)
	}
	return out, nil
}

// moduleRoot is the directory of the go.mod that contains the test's package.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside a Go module (go env GOMOD is %q)", gomod)
	}
	return filepath.Dir(gomod), nil
}
