package confine_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"orcr/testutil/clis"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"orcr/sandbox/confine"
)

// The test binary is its own launcher and its own confined program: with
// CONFINE_TEST=exec it is `orcr sandbox exec` (policy in CONFINE_POLICY, the command
// its arguments); with CONFINE_TEST=probe it tries each action of its arguments and
// prints one line per action: "ok" or the error.
func TestMain(m *testing.M) {
	switch os.Getenv("CONFINE_TEST") {
	case "exec":
		os.Setenv("CONFINE_TEST", "probe")
		err := confine.Exec(os.Getenv("CONFINE_POLICY"), os.Args[1:], os.Stderr)
		fmt.Fprintln(os.Stderr, "exec:", err)
		os.Exit(126)
	case "prepared":
		// A spare launcher: the ruleset built, then the test's changes, then the launch.
		os.Setenv("CONFINE_TEST", "probe")
		err := confine.PrepareAndExec(os.Getenv("CONFINE_POLICY"), os.Args[1:], func() {
			fmt.Println("prepared")
			bufio.NewReader(os.Stdin).ReadString('\n')
		}, os.Stderr)
		fmt.Fprintln(os.Stderr, "exec:", err)
		os.Exit(126)
	case "mainthread":
		tid, outside, err := confine.MainThreadWorker(confine.Policy{RW: []string{os.Getenv("CONFINE_WORK")}}, os.Getenv("CONFINE_OUTSIDE"))
		fmt.Printf("tid=%d pid=%d outside=%v err=%v\n", tid, os.Getpid(), outside, err)
		os.Exit(0)
	case "probe":
		for _, a := range os.Args[1:] {
			fmt.Println(probe(a))
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// probe does one action "verb:arg[:arg2]" and says how it went.
func probe(action string) string {
	verb, arg, _ := strings.Cut(action, ":")
	var err error
	switch verb {
	case "write":
		err = os.WriteFile(arg, []byte("x"), 0o644)
	case "read":
		_, err = os.ReadFile(arg)
	case "connect":
		var c net.Conn
		c, err = net.Dial("tcp", "127.0.0.1:"+arg)
		if err == nil {
			c.Close()
		}
	case "link":
		from, to, _ := strings.Cut(arg, ":")
		err = os.Link(from, to)
	case "mount":
		err = syscall.Mount("tmpfs", arg, "tmpfs", 0, "")
	case "kill":
		pid, _ := strconv.Atoi(arg)
		err = syscall.Kill(pid, 0)
	}
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return err.Error()
}

type box struct {
	t    *testing.T
	dir  string // the agent's cwd, rw
	home string // a fake HOME with .ssh
	self string
}

func newBox(t *testing.T) *box {
	t.Helper()
	if _, err := confine.KernelABI(); err != nil {
		clis.Missingf(t, "no Landlock here: %v", err)
	}
	root := t.TempDir()
	b := &box{t: t, dir: filepath.Join(root, "work"), home: filepath.Join(root, "home")}
	for _, d := range []string{b.dir, filepath.Join(b.home, ".ssh")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(b.home, ".ssh", "id_ed25519"), []byte("secret key"), 0o600)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b.self = self
	return b
}

func (b *box) policy(p confine.Policy) string {
	b.t.Helper()
	p.RW = append(p.RW, b.dir)
	p.ROX = append(p.ROX, "/usr", "/lib", "/lib64", "/bin", b.self)
	file := filepath.Join(b.t.TempDir(), "policy.json")
	if err := confine.Save(file, p); err != nil {
		b.t.Fatal(err)
	}
	return file
}

// run launches the probe confined by p and returns its lines and stderr.
func (b *box) run(p confine.Policy, actions ...string) ([]string, string) {
	b.t.Helper()
	file := b.policy(p)
	cmd := exec.Command(b.self, append([]string{b.self}, actions...)...)
	cmd.Env = append(os.Environ(), "CONFINE_TEST=exec", "CONFINE_POLICY="+file)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		b.t.Fatalf("launcher: %v\n%s", err, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(actions) {
		b.t.Fatalf("%d answers to %d actions: %q\n%s", len(lines), len(actions), lines, errb.String())
	}
	return lines, errb.String()
}

func expect(t *testing.T, actions, got []string, want ...string) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s: %s, want %s", actions[i], got[i], want[i])
		}
	}
}

const eacces = "permission denied"

func TestConfinedWritesItsDirOnly(t *testing.T) {
	b := newBox(t)
	outside := t.TempDir()
	acts := []string{"write:" + filepath.Join(b.dir, "a.txt"), "write:" + filepath.Join(outside, "b.txt"),
		"read:" + filepath.Join(b.home, ".ssh", "id_ed25519"), "write:" + filepath.Join(b.home, "x")}
	got, _ := b.run(confine.Policy{}, acts...)
	expect(t, acts, got, "ok", eacces, eacces, eacces)
	if _, err := os.Stat(filepath.Join(outside, "b.txt")); err == nil {
		t.Fatal("the write outside the policy happened")
	}
}

func TestConfinedConnectsOnlyToItsPorts(t *testing.T) {
	b := newBox(t)
	given, other := listen(t), listen(t)
	acts := []string{"connect:" + given, "connect:" + other}
	got, _ := b.run(confine.Policy{Ports: []int{port(given)}}, acts...)
	expect(t, acts, got, "ok", eacces)
}

func TestSymlinkAndHardLinkOutGiveNothing(t *testing.T) {
	b := newBox(t)
	key := filepath.Join(b.home, ".ssh", "id_ed25519")
	if err := os.Symlink(filepath.Join(b.home, ".ssh"), filepath.Join(b.dir, "ssh")); err != nil {
		t.Fatal(err)
	}
	acts := []string{"read:" + filepath.Join(b.dir, "ssh", "id_ed25519"), "link:" + key + ":" + filepath.Join(b.dir, "k"),
		"write:" + filepath.Join(b.dir, "ssh", "new")}
	got, _ := b.run(confine.Policy{}, acts...)
	expect(t, acts, got, eacces, "invalid cross-device link", eacces)
}

// A policy's rw given as a symlink to ~/.ssh grants the target, so the server resolves
// and checks what it grants before writing the policy (sandbox feature); the launcher
// refuses ".." outright.
func TestDotDotRefused(t *testing.T) {
	b := newBox(t)
	file := filepath.Join(t.TempDir(), "p.json")
	os.WriteFile(file, []byte(`{"rw":["`+b.dir+`/../home"],"rox":[],"ports":[]}`), 0o600)
	if _, err := confine.Load(file); err == nil || !strings.Contains(err.Error(), `".."`) {
		t.Fatalf("a policy with .. loaded: %v", err)
	}
	if _, err := confine.ExpandHome("~/../etc", "/home/u"); err == nil {
		t.Fatal("~/../etc expanded")
	}
	if p, err := confine.ExpandHome("~/.cache/go-build", "/home/u"); err != nil || p != "/home/u/.cache/go-build" {
		t.Fatalf("~/.cache/go-build: %q %v", p, err)
	}
	// A ".." element anywhere is refused; a name that only starts or ends with dots is not.
	for path, refused := range map[string]bool{"/a/../b": true, "/..": true, "/a/..": true, "/a/b/../": true,
		"/a/..b": false, "/a/b..": false, "/a/.../b": false, "/a/./b": false, "/a//b": false} {
		if err := confine.CheckPath(path); (err != nil) != refused {
			t.Errorf("CheckPath(%q): %v, want refused %v", path, err, refused)
		}
	}
}

func TestMissingPathWarnsAndRuns(t *testing.T) {
	b := newBox(t)
	acts := []string{"write:" + filepath.Join(b.dir, "a")}
	got, stderr := b.run(confine.Policy{RW: []string{"/no/such/dir"}}, acts...)
	expect(t, acts, got, "ok")
	if !strings.Contains(stderr, "/no/such/dir: skipped") {
		t.Fatalf("no warning for the missing path: %q", stderr)
	}
}

// Forcing ABI 3 is a kernel without network confinement: files stay confined, the
// connect goes through, and the launcher says the network is open.
func TestForcedOldABI(t *testing.T) {
	b := newBox(t)
	other := listen(t)
	report := filepath.Join(t.TempDir(), "report.json")
	acts := []string{"connect:" + other, "write:" + filepath.Join(t.TempDir(), "x")}
	got, stderr := b.run(confine.Policy{MaxABI: 3, Report: report}, acts...)
	expect(t, acts, got, "ok", eacces)
	if !strings.Contains(stderr, "network not confined: Landlock ABI 3 < 4") {
		t.Fatalf("no warning of the open network: %q", stderr)
	}
	rep, ok, err := confine.ReadReport(report)
	if err != nil || !ok || rep.ABI != 3 || rep.Net || rep.KernelABI < 3 {
		t.Fatalf("report %+v ok=%v err=%v", rep, ok, err)
	}
	got, _ = b.run(confine.Policy{Report: report}, acts...)
	expect(t, acts, got, eacces, eacces)
	if rep, _, _ := confine.ReadReport(report); !rep.Net || rep.ABI != min(rep.KernelABI, confine.MaxKnownABI) {
		t.Fatalf("report at the kernel's ABI: %+v", rep)
	}
}

// A confined process cannot mount (an inner sandbox cannot start), nor signal a
// process outside its sandbox (ABI ≥ 6).
func TestNoMountNoSignalOut(t *testing.T) {
	b := newBox(t)
	acts := []string{"mount:" + b.dir, "kill:" + strconv.Itoa(os.Getpid())}
	got, _ := b.run(confine.Policy{}, acts...)
	if got[0] == "ok" {
		t.Fatal("mount worked inside the sandbox")
	}
	if abi, _ := confine.KernelABI(); abi >= 6 && got[1] == "ok" {
		t.Fatal("a signal reached the test process from inside the sandbox")
	}
}

func listen(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
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
	_, p, _ := net.SplitHostPort(l.Addr().String())
	return p
}

func port(s string) int { n, _ := strconv.Atoi(s); return n }

// The launcher grants a folder entry by entry (Policy.Entries): each entry as it is
// when it starts, not the one that holds a kept path, not a symlink's target, not the
// folder itself.
func TestLauncherGrantsEntries(t *testing.T) {
	b := newBox(t)
	many, outside := t.TempDir(), t.TempDir()
	for _, d := range []string{"a", "b", filepath.Join("home", "orcr")} {
		os.MkdirAll(filepath.Join(many, d), 0o700)
	}
	os.Symlink(outside, filepath.Join(many, "link"))
	acts := []string{"write:" + filepath.Join(many, "a", "f"), "write:" + filepath.Join(many, "b", "f"),
		"write:" + filepath.Join(many, "home", "f"), "write:" + filepath.Join(many, "home", "orcr", "f"),
		"write:" + filepath.Join(many, "link", "f"), "write:" + filepath.Join(many, "f")}
	got, _ := b.run(confine.Policy{Entries: &confine.Entries{Dir: many, Keep: []string{filepath.Join(many, "home", "orcr")}}}, acts...)
	expect(t, acts, got, "ok", "ok", eacces, eacces, eacces, eacces)
}

// A confined thread is never the process's main thread (the kernel answers /proc/PID,
// ptrace and signals of the process as its main thread: the agents would share their
// server's domain): a worker started there hands the work to another thread, and the
// main thread stays unconfined. The child runs with its main goroutine locked to the
// main thread; without the check the worker confines it and never returns.
func TestNeverConfinesMainThread(t *testing.T) {
	if _, err := confine.KernelABI(); err != nil {
		clis.Missingf(t, "no Landlock here: %v", err)
	}
	root := t.TempDir()
	work, outside := filepath.Join(root, "work"), filepath.Join(root, "outside")
	os.MkdirAll(work, 0o700)
	os.MkdirAll(outside, 0o700)
	self, _ := os.Executable()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(os.Environ(), "CONFINE_TEST=mainthread", "CONFINE_WORK="+work, "CONFINE_OUTSIDE="+outside)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child (main thread confined and kept?): %v\n%s", err, out)
	}
	var tid, pid int
	var rest string
	if _, err := fmt.Sscanf(string(out), "tid=%d pid=%d outside=%s", &tid, &pid, &rest); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if tid == pid || tid == 0 || !strings.Contains(string(out), "outside=<nil> err=<nil>") {
		t.Fatalf("worker on thread %d of %d; %s", tid, pid, out)
	}
}

// A spare launcher builds its ruleset before its launch comes (confine.Await's
// --prepare): what changed in between is what the launch gets, as if built then — an
// entry moved out of the folder granted entry by entry is not writable where it went
// (the prepared ruleset held its inode), an entry made since is writable, the
// agent's folder made again is writable, a kept path stays out.
func TestPreparedRulesetFollowsChanges(t *testing.T) {
	b := newBox(t)
	many, outside := t.TempDir(), t.TempDir()
	for _, d := range []string{"moved", "stays", filepath.Join("home", "orcr")} {
		os.MkdirAll(filepath.Join(many, d), 0o700)
	}
	file := b.policy(confine.Policy{Entries: &confine.Entries{Dir: many, Keep: []string{filepath.Join(many, "home", "orcr")}}})
	acts := []string{"write:" + filepath.Join(outside, "moved", "f"), "write:" + filepath.Join(many, "stays", "f"),
		"write:" + filepath.Join(many, "new", "f"), "write:" + filepath.Join(b.dir, "f"),
		"write:" + filepath.Join(many, "home", "orcr", "f"), "write:" + filepath.Join(outside, "f")}
	cmd := exec.Command(b.self, append([]string{b.self}, acts...)...)
	cmd.Env = append(os.Environ(), "CONFINE_TEST=prepared", "CONFINE_POLICY="+file)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	if l, err := r.ReadString('\n'); l != "prepared\n" {
		t.Fatalf("the launcher: %q %v\n%s", l, err, errb.String())
	}
	// Between the preparation and the launch: an entry moved out, one made, the
	// agent's folder made again.
	if err := os.Rename(filepath.Join(many, "moved"), filepath.Join(outside, "moved")); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(many, "new"), 0o700)
	os.RemoveAll(b.dir)
	os.MkdirAll(b.dir, 0o700)
	in.Write([]byte("go\n"))
	rest, _ := io.ReadAll(r)
	cmd.Wait()
	got := strings.Split(strings.TrimSpace(string(rest)), "\n")
	if len(got) != len(acts) {
		t.Fatalf("%d answers to %d actions: %q\n%s", len(got), len(acts), got, errb.String())
	}
	expect(t, acts, got, eacces, "ok", "ok", "ok", eacces, eacces)
}
