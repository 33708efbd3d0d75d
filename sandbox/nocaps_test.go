package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/wire"
	"orcr/pty"
	"orcr/sandbox/confine"
	"orcr/testutil/clis"
	"orcr/testutil/wait"
)

// TestInProcessWithoutCapabilities: a server that holds no capabilities confines its
// pty agents from a thread of its own by default (no launcher process), and they read
// /proc as a whole — their own /proc/self (node's process.memoryUsage() works) — while
// Landlock keeps the server's environ and maps closed to them, and their writes
// outside their folder fail. Run as root, the test runs itself again as nobody (a
// root server keeps the launcher: there a confined process could read other
// processes' environ).
func TestInProcessWithoutCapabilities(t *testing.T) {
	if _, err := confine.KernelABI(); err != nil {
		clis.Missingf(t, "no Landlock here: %v", err)
	}
	if os.Getenv("ORCR_SANDBOX_NOCAPS_CHILD") == "" && os.Geteuid() == 0 {
		if New(Options{}).inProcess {
			t.Fatal("a root server confines pty agents in-process by default")
		}
		asNobody(t, "TestInProcessWithoutCapabilities")
		return
	}
	if !holdsNoCapabilities() {
		// Only reachable when not root (root re-runs the test as nobody above) and yet
		// holding capabilities, e.g. file capabilities on the test binary: shedding them
		// needs a uid change only root can make, and with any capability the server
		// rightly keeps the launcher, so there is no in-process default to test.
		t.Skip("not root, yet holds capabilities: the test needs a server without any, and only root can re-run it as nobody")
	}
	root := t.TempDir()
	work, outside := filepath.Join(root, "work"), filepath.Join(root, "outside")
	os.MkdirAll(work, 0o700)
	os.MkdirAll(outside, 0o700)
	self, _ := os.Executable()
	f := New(Options{Home: filepath.Join(root, "orcr"), Self: self, Socket: filepath.Join(root, "orcr", "orcr.sock")})
	if !f.inProcess || !f.proc {
		t.Fatalf("no capabilities, and in-process %v, /proc %v", f.inProcess, f.proc)
	}
	h := pty.New(pty.Options{})
	defer h.Shutdown(context.Background())
	node := ""
	if p, err := exec.LookPath("node"); err == nil {
		node = fmt.Sprintf(`%s -e 'console.log("rss-" + (process.memoryUsage().rss > 0))'; `, p)
	}
	abi, _ := confine.KernelABI()
	for i := range 4 {
		// Each launch: the main thread of this process must never be the one
		// confined (pty's confinedStart), or the agent shares its server's domain.
		id := fmt.Sprint("a", i)
		signal := ""
		if abi >= 6 {
			signal = fmt.Sprintf(`kill -0 %d && echo SIGNALLED-SERVER; `, os.Getpid())
		}
		script := fmt.Sprintf(`head -1 /proc/self/status && echo self-ok; %[3]s%[4]s`+
			`cat /proc/%[1]d/environ > /dev/null && echo SERVER-ENVIRON; `+
			`head -1 /proc/%[1]d/maps && echo SERVER-MAPS; `+
			`echo out > %[2]s/f && echo OUT-WRITTEN; echo done; exec sleep 60`, os.Getpid(), outside, node, signal)
		spec := &core.LaunchSpec{Argv: []string{"sh", "-c", script}, Cwd: work, Env: []string{"HOME=" + root + "/nohome", "PATH=/usr/bin:/bin"}}
		a := wire.Agent{ID: id, Path: id, Cwd: work, Sandbox: &wire.Sandbox{Mode: wire.SandboxOn}}
		ok, err := f.WrapLaunch(context.Background(), a, spec, core.Confinement{})
		if err != nil || !ok || spec.Confine == nil {
			t.Fatalf("wrap: %v %v %+v", ok, err, spec.Confine)
		}
		info, err := h.Launch(context.Background(), *spec)
		if err != nil {
			t.Fatal(err)
		}
		var screen string
		wait.For(t, 30*time.Second, "the agent's lines", func() bool {
			s, _ := h.Read(context.Background(), info.ID, core.ReadOpts{Lines: 50})
			screen = s.Text
			return strings.Contains(screen, "done")
		})
		for _, bad := range []string{"SERVER-ENVIRON", "SERVER-MAPS", "SIGNALLED-SERVER", "OUT-WRITTEN", "sandbox exec"} {
			if strings.Contains(screen, bad) {
				t.Fatalf("launch %d: %s:\n%s", i, bad, screen)
			}
		}
		if !strings.Contains(screen, "self-ok") || (node != "" && !strings.Contains(screen, "rss-true")) {
			t.Fatalf("launch %d: the agent cannot read its own /proc/self:\n%s", i, screen)
		}
		rep, ok, err := confine.ReadReport(filepath.Join(f.o.Home, "agents", id, ReportFile))
		if err != nil || !ok || !rep.InProcess || rep.PID != info.PID {
			t.Fatalf("report %+v %v %v (pane pid %d)", rep, ok, err, info.PID)
		}
		h.Close(context.Background(), info.ID)
	}
	// Through the cache (how often it is reused is confine's test: here /tmp holds
	// the test's home, and its entries, granted one by one, come and go).
	if f.rulesets.Builds+f.rulesets.Hits != 4 || f.rulesets.Builds < 1 {
		t.Fatalf("%d rulesets built, %d reused for four launches", f.rulesets.Builds, f.rulesets.Hits)
	}
}

// asNobody runs this test binary's test name as uid/gid 65534, without capabilities,
// and fails with its output when it fails.
func asNobody(t *testing.T, name string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "orcr-nocaps-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	self, _ := os.Executable()
	bin := filepath.Join(dir, "sandbox.test")
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run", "^"+name+"$", "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "TMPDIR=" + dir, "ORCR_SANDBOX_NOCAPS_CHILD=1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+name) {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
}
