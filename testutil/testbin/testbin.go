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
	mu.Lock()
	b, ok := builds[pkg]
	if !ok {
		b = &build{}
		builds[pkg] = b
	}
	mu.Unlock()
	b.once.Do(func() { b.path, b.err = goBuild(pkg) })
	if b.err != nil {
		t.Fatalf("testbin: %v", b.err)
	}
	return b.path
}

// goBuild builds pkg into a per-user directory keyed by the module root and package,
// writing a temporary file and renaming it so concurrent test binaries (and programs
// still running from an earlier build) never see a half-written file.
func goBuild(pkg string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(root + "\x00" + pkg))
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
	cmd := exec.Command("go", "build", "-o", tmp.Name(), pkg)
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
