package e2e

import (
	"context"
	crand "crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"orcr/core/wire"
	"orcr/store"
	"orcr/testutil/clis"
	"orcr/testutil/wait"
)

// call is roundTrip for another goroutine than the test's: it returns what went wrong.
func (rc *rawConn) call(line string) (wire.Response, error) {
	var r wire.Response
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := rc.c.Write([]byte(line + "\n")); err != nil {
		return r, err
	}
	resp, err := rc.r.ReadBytes('\n')
	if err != nil {
		return r, fmt.Errorf("read response to %.60q: %w", line, err)
	}
	return r, json.Unmarshal(resp, &r)
}

// seedRecords writes n ended agents into the home's store before the server opens it:
// a server that has run for a while, without spawning n real agents first.
func seedRecords(t *testing.T, home string, n int) {
	t.Helper()
	st, err := store.Open(filepath.Join(home, "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	at := time.Now().Add(-time.Hour).UTC()
	for i := range n {
		cost := 0.001
		a := wire.Agent{ID: uuid.Must(uuid.NewV7()).String(), Path: fmt.Sprintf("old/batch%d/a%03d", i%7, i),
			Provider: "shell", Argv: []string{"true"}, Cwd: "/", State: wire.StateExited, StateSource: "server",
			Host: "pty", CreatedAt: at, StateAt: at, Usage: wire.Usage{CostUSD: &cost, OutputTokens: 100}}
		if err := st.PutAgent(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
}

// A budget on 2,040 stars (under the 2,048-byte glob bound) made every agent event
// re-sum every budget over every record, ~17 ms a match, while admission waited for it
// under the engine lock: another client's `agent get` waited 253 s, and SIGTERM left the
// server alive for 24 minutes with its lock held. Now a budget's glob is compiled once,
// each path is matched once (at spawn, outside the engine lock) and the totals move with
// each event; shutdown is bounded whatever a feature is doing; and a new server starts.
func TestLongBudgetGlobDoesNotFreezeTheServer(t *testing.T) {
	e := newEnv(t)
	seedRecords(t, e.home, 500)
	e.serve()
	stars := strings.Repeat("*", 2040)
	e.must("budget", "set", stars, "--usd", "5")
	e.must("agent", "run", "probe/one", "--", "sleep", "300")
	for i := range 3 {
		e.must("agent", "run", fmt.Sprintf("live/a%d", i), "--", "sleep", "300")
	}

	// One client spawns short agents (each a handful of events) while another asks for
	// an agent; the asker must not wait behind the budgets.
	var wg sync.WaitGroup
	done := make(chan struct{})
	spawner := e.raw()
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for i := range 40 {
			r, err := spawner.call(fmt.Sprintf(`{"id":"s%d","method":"agent.run","params":{"path":"burst/a%d","argv":["sh","-c","exit 0"],"cwd":"/"}}`, i, i))
			if err == nil && r.Error != nil {
				err = r.Error
			}
			if err != nil {
				t.Errorf("spawn %d: %v", i, err)
				return
			}
		}
	}()
	asker := e.raw()
	var took []time.Duration
	for n := 0; ; n++ {
		select {
		case <-done:
		default:
			start := time.Now()
			r, err := asker.call(fmt.Sprintf(`{"id":"g%d","method":"agent.get","params":{"target":"probe/one"}}`, n))
			took = append(took, time.Since(start))
			if err == nil && r.Error != nil {
				err = r.Error
			}
			if err == nil {
				continue
			}
			t.Errorf("agent get: %v", err) // go on: the shutdown below is under test too
		}
		break
	}
	wg.Wait()
	slices.Sort(took)
	t.Logf("%d gets during the spawns: median %v, max %v", len(took), took[len(took)/2], took[len(took)-1])
	// The bound scales with the machine's load (ORCR_TEST_WAIT_SCALE): the freeze it
	// guards against was minutes; a get on a busy 2-core machine is a few hundred ms.
	if m, bound := took[len(took)/2], wait.Scale(100*time.Millisecond); m > bound {
		t.Errorf("agent get took %v (median of %d) while agents were spawned under the budget; want < %v", m, len(took), bound)
	}
	out := e.must("budget", "ls")
	if !strings.Contains(out, "$0.50") {
		t.Errorf("the budget's total is not the 500 seeded records' $0.50:\n%s", out)
	}

	// SIGTERM with the budget set and agents running: gone within 5 s, lock released.
	start := time.Now()
	if err := e.srv.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.srv.Exited():
		t.Logf("SIGTERM: exited in %v", time.Since(start))
	case <-time.After(5 * time.Second):
		t.Fatalf("SIGTERM: the server is still running after 5 s")
	}
	e.serve()
	if out := e.must("agent", "ls", "--all"); !strings.Contains(out, "probe/one") {
		t.Fatalf("the next server lost the agents:\n%s", out)
	}
}

// A part of the server that hangs in its Close no longer keeps the process alive: with
// orcr's tmux server stopped (SIGSTOP), the engine's Close waited on it and SIGTERM left
// `orcr serve` running for good. Now each part gets a bound, the log names the part and
// dumps every goroutine, the lock is released, and a new server starts.
func TestShutdownIsBoundedWhenAPartHangs(t *testing.T) {
	e := newTmuxEnv(t)
	e.serve()
	e.must("agent", "run", "hung/one", "--", "sleep", "300")
	sock := filepath.Join(e.home, "tmux.sock")
	out, err := exec.Command("tmux", "-S", sock, "display-message", "-p", "#{pid}").Output()
	if err != nil {
		t.Fatalf("tmux pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	cont := func() { _ = syscall.Kill(pid, syscall.SIGCONT) }
	t.Cleanup(cont) // before the tmux server is killed (cleanups run last first)
	start := time.Now()
	if err := e.srv.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.srv.Exited():
		t.Logf("SIGTERM with tmux stopped: exited in %v", time.Since(start))
	case <-time.After(5 * time.Second):
		t.Fatalf("SIGTERM with tmux stopped: the server is still running after 5 s")
	}
	b, err := os.ReadFile(filepath.Join(e.home, "orcr.log"))
	if err != nil {
		t.Fatal(err)
	}
	if log := string(b); !strings.Contains(log, "did not close in time") || !strings.Contains(log, "part=engine") ||
		!strings.Contains(log, "goroutine ") {
		t.Errorf("the log does not name the part that hung with a goroutine dump:\n%.2000s", log)
	}
	cont()
	e.serve()
	if out := e.must("agent", "ls"); !strings.Contains(out, "hung/one") {
		t.Fatalf("the next server lost the agent:\n%s", out)
	}
}

// The store's guard checks for room before each write, but badger also writes on its own:
// a memtable flush or a compaction builds its table into a memory-mapped file created
// sparse, and when another process has filled the disk meanwhile the first store into an
// unbacked page is SIGBUS — the server died in table.CreateTable within a few of these
// rounds. Here dd fills a small tmpfs under the server again and again while two clients
// spawn agents with large, incompressible prompts (each flush writes a table of 2 MiB). The
// server must live through it, answer writes with store_unavailable while the disk is full
// and reads all along, and write again once the fillers are removed.
func TestServerLivesThroughDiskFilledDuringWrites(t *testing.T) {
	clis.NeedRoot(t, "mount a tmpfs")
	e := newEnv(t)
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64m,mode=0700", "tmpfs", e.home).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", e.home).Run() })
	e.serve()
	e.must("agent", "run", "before/full", "--", "sleep", "300")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	lost := "" // the first connection error: the server is gone
	// A record and an event of 40 KiB each, and not compressible: the memtable fills fast
	// and each flush writes a table of its full size, while the disk fills.
	raw := make([]byte, 30<<10)
	if _, err := crand.Read(raw); err != nil {
		t.Fatal(err)
	}
	big := base64.StdEncoding.EncodeToString(raw)
	// stacks ends a server that did not answer in time with SIGQUIT and returns the
	// goroutine dump Go prints on it: where the hung call waits is the diagnosis.
	stacks := func() string {
		t.Helper()
		if err := e.srv.Cmd.Process.Signal(syscall.SIGQUIT); err != nil {
			return "SIGQUIT: " + err.Error()
		}
		select {
		case <-e.srv.Exited():
		case <-time.After(15 * time.Second):
		}
		out := e.srv.Output()
		if i := strings.Index(out, "SIGQUIT"); i >= 0 {
			return out[i:]
		}
		return out
	}
	for w := range 2 {
		rc := e.raw()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_, err := rc.call(fmt.Sprintf(`{"id":"w","method":"agent.run","params":{"path":"w%d/a%d","argv":["true"],"cwd":"/","prompt":%q}}`, w, i, big))
				if err != nil {
					mu.Lock()
					if lost == "" {
						lost = err.Error()
						// A call that timed out is a hang: where the server waits is the
						// diagnosis (this ends the server, and the test with it).
						if errors.Is(err, os.ErrDeadlineExceeded) {
							lost += "\nthe server's goroutines:\n" + stacks()
						}
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	filler := filepath.Join(e.home, "filler")
	// alive fails the test if the server has exited, waiting up to grace for the exit of a
	// server a client just lost its connection to.
	alive := func(when string, grace time.Duration) {
		t.Helper()
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case <-e.srv.Exited():
		case <-timer.C:
			select {
			case <-e.srv.Exited():
			default:
				return
			}
		}
		close(stop)
		wg.Wait()
		if lost != "" {
			// The server's own last words say why it went (seen once beside two busy
			// loops at a load of ~35: round 3's writer read EOF, and nothing more).
			t.Fatalf("%s: a writer lost its connection: %s\nthe server (%s) said:\n%s", when, lost, e.srv.Cmd.ProcessState, tail(e.srv.Output(), 4000))
		}
		t.Fatalf("%s: the server died (%s); its output:\n%.4000s", when, e.srv.Cmd.ProcessState, e.srv.Output())
	}
	// free is what the disk has free for the server's user now.
	free := func() int64 {
		var st syscall.Statfs_t
		if err := syscall.Statfs(e.home, &st); err != nil {
			t.Fatal(err)
		}
		return int64(st.Bavail) * st.Bsize
	}
	for round := range 20 {
		// First leave a little more room than the store's check asks (16 MiB), so writes
		// go on, then let dd take the rest at once while they do: dd stops at ENOSPC, the
		// disk is then full, and writes that passed the check meet a full disk.
		if room := free() - (16<<20 + 512<<10); room > 0 {
			f, err := os.Create(filler + "0")
			if err != nil {
				t.Fatal(err)
			}
			if err := syscall.Fallocate(int(f.Fd()), 0, 0, room); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
		_ = exec.Command("dd", "if=/dev/zero", "of="+filler, "bs=4M").Run()
		before := free()
		r := e.orcr("agent", "run", fmt.Sprintf("full/r%d", round), "--", "true")
		after := free()
		alive(fmt.Sprintf("round %d, disk full", round), 0)
		if r.Code == 0 && max(before, after) >= 16<<20 {
			// The store let go of files of its own after dd stopped (a flushed
			// memtable's log, a compaction's old tables: seen beside two busy loops),
			// so the disk had room when the server checked: accepting was right.
			t.Logf("round %d: the disk had room again (%d MiB before the run, %d after): accepted, rightly", round, before>>20, after>>20)
		} else if r.Code == 0 || !strings.Contains(r.Err, "store cannot write") {
			alive(fmt.Sprintf("round %d, disk full", round), 5*time.Second)
			close(stop)
			t.Fatalf("round %d: agent run on a full disk: exit %d: %s%s\nthe server's goroutines:\n%s", round, r.Code, r.Out, r.Err, stacks())
		}
		if r := e.orcr("agent", "ls"); r.Code != 0 || !strings.Contains(r.Out, "before/full") {
			alive(fmt.Sprintf("round %d, reading on a full disk", round), 5*time.Second)
			close(stop)
			t.Fatalf("round %d: reads on a full disk: exit %d: %s%s\nthe server's goroutines:\n%s", round, r.Code, r.Out, r.Err, stacks())
		}
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
		os.Remove(filler + "0")
		// Writes resume by themselves, without a restart.
		wait.For(t, 20*time.Second, "a write after the disk has room again", func() bool {
			alive(fmt.Sprintf("round %d, room again", round), 0)
			return e.orcr("agent", "run", fmt.Sprintf("after/r%d", round), "--", "true").Code == 0
		})
	}
	close(stop)
	wg.Wait()
	alive("the end", 0)
	if lost != "" {
		t.Fatalf("a writer lost its connection: %s", lost)
	}
}

// tail is the last n bytes of s (a server's output ends with why it stopped).
func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
