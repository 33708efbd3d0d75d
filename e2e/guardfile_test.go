package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"orcr/orchestrate/run"
	runapi "orcr/orchestrate/run/api"
	"orcr/testutil/wait"
)

// TestSpecialFilesRefused swaps a running run's plan for a link to /dev/zero and then
// for a FIFO, and the config for both plus SIGHUP, under a bound on the server's address
// space. Before, /dev/zero was read until the server was OOM-killed and a FIFO parked an
// OS thread per `run status` (300 calls: 311 threads). Now each is refused with the
// reason, the server lives, and its thread count does not grow with the calls.
func TestSpecialFilesRefused(t *testing.T) {
	e, repo := newRepoEnv(t)
	seedPlansText(t, e.home, repo, oneMilestoneBody, "g")
	e.serve()
	t.Cleanup(func() { stopAgentProcs(t, e, "runs/**") })
	pid := e.srv.Cmd.Process.Pid
	boundMemory(t, pid)

	e.must("run", "start", "g", "--coders", "1", "--coder", "shell", "--lead", "none", "--", "sh", "-c", "cat >/dev/null")
	plan := filepath.Join(repo, ".orcr", "plans", "g.md")

	// The plan becomes a link to /dev/zero: the plan watch refuses it with the reason.
	os.Remove(plan)
	if err := os.Symlink("/dev/zero", plan); err != nil {
		t.Fatal(err)
	}
	events := func() string {
		es, _ := e.client().RunEvents(context.Background(), runapi.RunEventsParams{Name: "g"})
		var b strings.Builder
		for _, en := range es {
			b.WriteString(en.Kind + " " + en.Text + "\n")
		}
		return b.String()
	}
	if !wait.Until(60*time.Second, func() bool {
		return strings.Contains(events(), "is not a regular file (it is a character device)")
	}) {
		t.Fatalf("a plan linked to /dev/zero was not refused; events:\n%s\nserver:\n%s", events(), e.srv.Output())
	}
	r := e.orcr("plan", "show", "g")
	if !strings.Contains(r.Out+r.Err, "not a regular file") {
		t.Fatalf("plan show of a /dev/zero plan: exit %d\n%s%s", r.Code, r.Out, r.Err)
	}
	alive(t, e)

	// The plan becomes a FIFO, and the run's own copy is gone (a run from before the
	// copy existed), so every run.status and plan.get opens the FIFO.
	os.Remove(plan)
	if err := syscall.Mkfifo(plan, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(run.PlanCopy(e.home, "g"))
	c := e.client()
	ctx := context.Background()
	if _, err := c.RunStatus(ctx, "g"); err != nil { // the first call settles the pools
		t.Fatal(err)
	}
	before := threads(t, pid)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	sem := make(chan struct{}, 20)
	for i := range 300 {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			var err error
			if i%2 == 0 {
				_, err = c.RunStatus(cctx, "g")
			} else {
				g, gerr := c.PlanGet(cctx, "g")
				err = gerr
				if err == nil && (len(g.Problems) == 0 || !strings.Contains(g.Problems[0].Message, "is not a regular file (it is a named pipe)")) {
					mu.Lock()
					failed = append(failed, fmt.Sprintf("plan.get problems: %+v", g.Problems))
					mu.Unlock()
				}
			}
			if err != nil {
				mu.Lock()
				failed = append(failed, err.Error())
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	after := threads(t, pid)
	if len(failed) > 0 {
		t.Fatalf("%d of 300 calls on a FIFO plan failed (threads %d → %d), first: %s", len(failed), before, after, failed[0])
	}
	if after > before+10 {
		t.Fatalf("300 calls on a FIFO plan took the server from %d to %d threads", before, after)
	}

	// The config: a link to /dev/zero, then a FIFO, each with SIGHUP. The reload is
	// refused with the reason and the server keeps its config and answers.
	cfg := filepath.Join(lastVar(e.vars, "XDG_CONFIG_HOME"), "orcr", "config.toml")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(e.home, "orcr.log")
	for i, mk := range []func() error{
		func() error { return os.Symlink("/dev/zero", cfg) },
		func() error { return syscall.Mkfifo(cfg, 0o600) },
	} {
		os.Remove(cfg)
		if err := mk(); err != nil {
			t.Fatal(err)
		}
		want := []string{"it is a character device", "it is a named pipe"}[i]
		if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		if !wait.Until(30*time.Second, func() bool {
			b, _ := os.ReadFile(logFile)
			return strings.Contains(string(b), "config reload failed") && strings.Contains(string(b), want)
		}) {
			b, _ := os.ReadFile(logFile)
			t.Fatalf("config %s was not refused on SIGHUP; log:\n%s", want, b)
		}
		alive(t, e)
	}
	if n := threads(t, pid); n > after+10 {
		t.Fatalf("the config reloads took the server from %d to %d threads", after, n)
	}
}

// boundMemory caps pid's address space at what it uses now plus 1 GiB: reading
// /dev/zero without bound then kills it within seconds instead of the machine.
func boundMemory(t *testing.T, pid int) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	var vm uint64
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmSize:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			vm = kb << 10
		}
	}
	if vm == 0 {
		t.Fatal("no VmSize for the server")
	}
	lim := unix.Rlimit{Cur: vm + 1<<30, Max: vm + 1<<30}
	if err := unix.Prlimit(pid, unix.RLIMIT_AS, &lim, nil); err != nil {
		t.Fatalf("bound the server's memory: %v", err)
	}
}

// threads is pid's OS thread count.
func threads(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		t.Fatalf("the server is gone: %v", err)
	}
	return len(ents)
}

// alive fails unless the server still answers.
func alive(t *testing.T, e *env) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.client().Ping(ctx); err != nil {
		t.Fatalf("the server does not answer: %v\n%s", err, e.srv.Output())
	}
}

func lastVar(vars []string, key string) string {
	v := ""
	for _, kv := range vars {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
