package confine

import (
	"os"
	"testing"
)

// BenchmarkRulesetValid is the check before a kept ruleset is used again, on the
// paths of a pty agent's policy as the server builds it (the toolchain, /etc, /proc,
// the devices, the agent's folder and /tmp).
func BenchmarkRulesetValid(b *testing.B) {
	dir := b.TempDir()
	var ps []string
	for _, p := range []string{dir, "/tmp", "/var/tmp", "/usr", "/bin", "/sbin", "/lib", "/lib64", "/opt", "/usr/bin/sh",
		"/etc", "/sys", "/proc", "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty",
		"/dev/ptmx", "/dev/pts", "/dev/shm"} {
		if _, err := os.Stat(p); err == nil {
			ps = append(ps, p)
		}
	}
	_, ids, err := build(Policy{RW: ps})
	if err != nil {
		b.Skip(err)
	}
	r := &ruleset{ids: ids}
	b.ReportAllocs()
	for b.Loop() {
		if !r.valid(nil) {
			b.Fatal("changed")
		}
	}
}
