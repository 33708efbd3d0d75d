package cli_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"orcr/testutil/testbin"
)

// TestDoctorIsAligned runs the real binary's doctor (no server) and holds every
// indented section (hosts, providers, caps, accounts) to columns: the second and third
// cells of each row start where those of the other rows of the section start, whatever
// the length of a name or a version.
func TestDoctorIsAligned(t *testing.T) {
	bin := testbin.Build(t, "orcr")
	home := t.TempDir()
	cmd := exec.Command(bin, "doctor")
	cmd.Env = append(os.Environ(), "ORCR_HOME="+home, "XDG_CONFIG_HOME="+home, "SHELL=/bin/sh", "ORCR_SOCKET=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
	gap := regexp.MustCompile(`\S {2,}\S`)
	var section []string
	check := func() {
		defer func() { section = nil }()
		if len(section) < 2 {
			return
		}
		var want []int
		for _, l := range section {
			var starts []int
			for _, m := range gap.FindAllStringIndex(l, 2) {
				starts = append(starts, utf8.RuneCountInString(l[:m[1]-1]))
			}
			if want == nil {
				want = starts
			}
			for i := 0; i < min(len(want), len(starts)); i++ {
				if starts[i] != want[i] {
					t.Errorf("cell %d of %q starts at %d, the section's first row's at %d:\n%s", i+2, l, starts[i], want[i], strings.Join(section, "\n"))
				}
			}
		}
	}
	sections := 0
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "  ") {
			section = append(section, l)
			continue
		}
		if len(section) > 1 {
			sections++
		}
		check()
	}
	check()
	if sections < 3 {
		t.Fatalf("doctor printed %d sections of rows, want hosts, providers, caps and accounts:\n%s", sections, out)
	}
}
