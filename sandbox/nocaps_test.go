package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
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

// TestInProcessWithoutCapabilities: a server that holds no capabilities (a user's)
// confines its pty agents from a thread of its own by default (no launcher process).
// Run as root, the test runs itself again as nobody (TestInProcessAsRoot is root's own
// path).
func TestInProcessWithoutCapabilities(t *testing.T) {
	if _, err := confine.KernelABI(); err != nil {
		clis.Missingf(t, "no Landlock here: %v", err)
	}
	if os.Getenv("ORCR_SANDBOX_NOCAPS_CHILD") == "" && os.Geteuid() == 0 {
		asNobody(t, "TestInProcessWithoutCapabilities")
		return
	}
	checkInProcess(t).Close()
}

// TestInProcessAsRoot: a root server (CI, a container's) confines its pty agents from
// a thread of its own by default too. The thread drops every capability before the
// fork, so the agent, uid 0, holds none: it reads its own /proc/self, and Landlock
// keeps it out of the server's environ and maps (with root's capabilities it read
// both: the reason root kept the launcher); it cannot write outside its folder, read
// ~/.ssh, connect to a port it was not given or signal the server. The server keeps
// its capabilities on every thread, and none of its threads is confined.
func TestInProcessAsRoot(t *testing.T) {
	if _, err := confine.KernelABI(); err != nil {
		clis.Missingf(t, "no Landlock here: %v", err)
	}
	if os.Geteuid() != 0 || os.Getenv("ORCR_SANDBOX_NOCAPS_CHILD") != "" {
		// Runs in CI and scripts/test, which run as root; a user's server (no
		// capabilities) is tested by TestInProcessWithoutCapabilities, and this test's
		// re-exec'd child belongs to that test.
		t.Skip("needs root: it tests a server that holds capabilities; a user's server is TestInProcessWithoutCapabilities")
	}
	before := threadCaps(t)
	if before == 0 {
		t.Skip("root here holds no capabilities (a container dropped them): that server is a user's, tested by TestInProcessWithoutCapabilities")
	}
	f := checkInProcess(t)
	// The thread made ahead after the last new policy, there before counting.
	wait.For(t, 10*time.Second, "the thread made ahead for the next policy", func() bool { return f.rulesets.Ahead() == 1 })
	// The confined threads kept to start the next agents of their policy hold none
	// (confine.Rulesets.Ready), nor the one made ahead for the next policy; every other
	// thread holds what it held.
	dropped := 0
	for tid, c := range threadCapsByTask(t) {
		if c != before {
			if c != 0 {
				t.Fatalf("server thread %s: CapEff %x after the confined launches, %x before", tid, c, before)
			}
			dropped++
		}
	}
	if live, ahead := f.rulesets.Live(), f.rulesets.Ahead(); dropped > live+ahead {
		t.Fatalf("%d server threads without capabilities, %d confined threads kept and %d made ahead", dropped, live, ahead)
	}
	f.Close()
	wait.For(t, 10*time.Second, "every thread of the server with its capabilities (the confined ones ended)", func() bool {
		for _, c := range threadCapsByTask(t) {
			if c != before {
				return false
			}
		}
		return true
	})
}

// checkInProcess launches four agents through the default in-process path and checks
// what each may and may not do, and that the server is left as it was; the caller
// closes the feature.
func checkInProcess(t *testing.T) *Feature {
	t.Helper()
	root := t.TempDir()
	work, outside, home := filepath.Join(root, "work"), filepath.Join(root, "outside"), filepath.Join(root, "home")
	for _, d := range []string{work, outside, filepath.Join(home, ".ssh")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), []byte("secret key"), 0o600); err != nil {
		t.Fatal(err)
	}
	closed := listenTCP(t)
	self, _ := os.Executable()
	f := New(Options{Home: filepath.Join(root, "orcr"), Self: self, Socket: filepath.Join(root, "orcr", "orcr.sock")})
	if !f.inProcess {
		t.Fatal("the default does not confine pty agents in-process")
	}
	h := pty.New(pty.Options{})
	defer h.Shutdown(context.Background())
	node := ""
	if p, err := exec.LookPath("node"); err == nil {
		node = fmt.Sprintf(`%s -e 'console.log("rss-" + (process.memoryUsage().rss > 0))'; `, p)
	}
	connect := ""
	if _, err := exec.LookPath("bash"); err == nil {
		connect = fmt.Sprintf(`bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d' && echo PORT-CONNECTED; `, closed)
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
		script := fmt.Sprintf(`head -1 /proc/self/status && echo self-ok; grep -E 'CapEff|CapBnd' /proc/self/status; %[3]s%[4]s%[5]s`+
			`cat /proc/%[1]d/environ > /dev/null && echo SERVER-ENVIRON; `+
			`head -1 /proc/%[1]d/maps && echo SERVER-MAPS; `+
			`cat %[6]s/.ssh/id_ed25519 && echo SSH-READ; `+
			`echo out > %[2]s/f && echo OUT-WRITTEN; echo in > in%[7]d && echo in-ok; echo done; exec sleep 60`,
			os.Getpid(), outside, node, signal, connect, home, i)
		spec := &core.LaunchSpec{Argv: []string{"sh", "-c", script}, Cwd: work, Env: []string{"HOME=" + home, "PATH=/usr/bin:/bin"}}
		a := wire.Agent{ID: id, Path: id, Host: "pty", Cwd: work, Sandbox: &wire.Sandbox{Mode: wire.SandboxOn}}
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
		for _, bad := range []string{"SERVER-ENVIRON", "SERVER-MAPS", "SIGNALLED-SERVER", "OUT-WRITTEN", "SSH-READ",
			"secret key", "PORT-CONNECTED", "sandbox exec"} {
			if strings.Contains(screen, bad) {
				t.Fatalf("launch %d: %s:\n%s", i, bad, screen)
			}
		}
		if !strings.Contains(screen, "self-ok") || !strings.Contains(screen, "in-ok") || (node != "" && !strings.Contains(screen, "rss-true")) {
			t.Fatalf("launch %d: the agent cannot read its own /proc/self or write its folder:\n%s", i, screen)
		}
		if !regexp.MustCompile(`CapEff:\s+0+\b`).MatchString(screen) {
			t.Fatalf("launch %d: the agent holds capabilities:\n%s", i, screen)
		}
		if os.Geteuid() == 0 && !regexp.MustCompile(`CapBnd:\s+0+\b`).MatchString(screen) {
			// Root's thread may empty its bounding set (CAP_SETPCAP), and does.
			t.Fatalf("launch %d: the agent's bounding set is not empty:\n%s", i, screen)
		}
		if _, err := os.Stat(filepath.Join(outside, "f")); err == nil {
			t.Fatalf("launch %d wrote outside its folder", i)
		}
		if err := f.written(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		rep, ok, err := confine.ReadReport(filepath.Join(f.o.Home, "agents", id, ReportFile))
		if err != nil || !ok || !rep.InProcess || rep.PID != info.PID {
			t.Fatalf("report %+v %v %v (pane pid %d)", rep, ok, err, info.PID)
		}
		h.Close(context.Background(), info.ID)
	}
	// Through the cache (how often it is reused is confine's test: here /tmp may hold
	// the test's home, and its entries come and go).
	if f.rulesets.Builds+f.rulesets.Hits != 4 || f.rulesets.Builds < 1 {
		t.Fatalf("%d rulesets built, %d reused for four launches", f.rulesets.Builds, f.rulesets.Hits)
	}
	serverUnconfined(t, outside)
	return f
}

// serverUnconfined checks that this process — this goroutine and goroutines forced
// onto threads of their own — can still write where its agents could not.
func serverUnconfined(t *testing.T, outside string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(outside, "server"), []byte("x"), 0o600); err != nil {
		t.Fatalf("the server was confined: %v", err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			time.Sleep(5 * time.Millisecond) // hold the thread so others need new ones
			errs <- os.WriteFile(filepath.Join(outside, fmt.Sprint("t", i)), []byte("x"), 0o600)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a thread of the server was confined: %v", err)
		}
	}
}

// listenTCP is a port on 127.0.0.1 that accepts connections (and is in no policy).
func listenTCP(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

// threadCaps is the effective capabilities of the calling thread's process (its
// status), threadCapsByTask those of each of its threads.
func threadCaps(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	return capEff(t, string(b))
}

func threadCapsByTask(t *testing.T) map[string]uint64 {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]uint64{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", e.Name(), "status"))
		if err != nil {
			continue // ended since
		}
		m[e.Name()] = capEff(t, string(b))
	}
	return m
}

func capEff(t *testing.T, status string) uint64 {
	t.Helper()
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no CapEff in status")
	return 0
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
