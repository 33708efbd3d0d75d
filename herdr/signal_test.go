package herdr

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The fake herdr server gives its panes' programs default ctrl-c and hangups, as a
// terminal multiplexer does, even in a test binary started with SIGINT ignored (the
// suite's script runs its lanes as background jobs, which ignore it): the conformance
// case that presses ctrl-c, in a copy of this binary started that way. It failed there
// (the program never interrupted, "exit code after ctrl-c = 0") before the fake server
// restored the dispositions (panesig).
func TestConformanceCtrlCWithSigintIgnored(t *testing.T) {
	cmd := exec.Command("sh", "-c", `trap '' INT QUIT; exec "$0" -test.run='^TestConformance$/^CtrlCInterrupts$' -test.v`, os.Args[0])
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestConformance/CtrlCInterrupts") {
		t.Fatalf("the ctrl-c case with SIGINT ignored: %v\n%s", err, out)
	}
}
