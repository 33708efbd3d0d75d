package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/wait"
	"orcr/tmux"
)

// newSpareEnv is a sandboxEnv whose server runs agents on its own tmux server.
func newSpareEnv(t *testing.T) *sandboxEnv {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux is required: %v (apt-get install tmux)", err)
	}
	s := newSandboxEnv(t, "ORCR_HOST=tmux", "TMUX_TMPDIR="+t.TempDir())
	t.Cleanup(func() { exec.Command("tmux", "-S", filepath.Join(s.home, "tmux.sock"), "kill-server").Run() })
	return s
}

func (s *sandboxEnv) tmux(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-S", filepath.Join(s.home, "tmux.sock")}, args...)...).Output()
	return strings.TrimSpace(string(out)), err
}

// sparePIDs are the pids of the panes of the spare launchers' sessions (spare-*),
// oldest window first (the one the next confined launch takes once all are ready).
func (s *sandboxEnv) sparePIDs() []int {
	out, err := s.tmux("list-panes", "-a", "-F", "#{session_name} #{window_id} #{pane_pid}")
	if err != nil {
		return nil
	}
	type win struct{ id, pid int }
	var ws []win
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) != 3 || !strings.HasPrefix(f[0], "spare") {
			continue
		}
		w, _ := strconv.Atoi(strings.TrimPrefix(f[1], "@"))
		n, _ := strconv.Atoi(f[2])
		ws = append(ws, win{w, n})
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].id < ws[j].id })
	var pids []int
	for _, w := range ws {
		pids = append(pids, w.pid)
	}
	return pids
}

// readySpare waits for the spare launchers (tmux.DefaultSpares) connected to the
// server, and returns the pid of the oldest, which the next confined launch takes.
func (s *sandboxEnv) readySpare(t *testing.T) int {
	t.Helper()
	var pid int
	wait.For(t, 20*time.Second, "the spare launchers waiting", func() bool {
		pids := s.sparePIDs()
		if len(pids) != tmux.DefaultSpares {
			return false
		}
		// Their sockets are gone once the server accepted the launchers' connections.
		socks, _ := filepath.Glob(filepath.Join(s.home, "spare", "*.sock"))
		pid = pids[0]
		return len(socks) == 0
	})
	return pid
}

// startedAgent is target once the server recorded its pid (its program may have run,
// and written its probe, before the launch returned to the server).
func startedAgent(t *testing.T, s *sandboxEnv, target string) wire.Agent {
	t.Helper()
	var ag wire.Agent
	wait.For(t, 20*time.Second, target+"'s pid recorded", func() bool {
		ag = agentJSON(t, s.env, target)
		return ag.PID != 0
	})
	return ag
}

// spareProbe writes what its agent sees (environment, folder, terminal size, whether it
// may write outside its folder) to NAME.probe in its folder, then waits.
func spareProbe(outside, name string) string {
	return fmt.Sprintf(`{ env | grep -v '^_=' | sort; echo "cwd=$(pwd -P)"; echo "size=$(stty size)"
if echo x > %[1]s/%[2]s.txt 2>/dev/null; then echo outside=yes; else echo outside=no; fi; } > %[2]s.tmp && mv %[2]s.tmp %[2]s.probe
exec cat`, outside, name)
}

func (s *sandboxEnv) probe(t *testing.T, name string) map[string]string {
	t.Helper()
	var b []byte
	wait.For(t, 20*time.Second, name+"'s probe", func() bool {
		var err error
		b, err = os.ReadFile(filepath.Join(s.work, name+".probe"))
		return err == nil
	})
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(l, "=")
		m[k] = v
	}
	return m
}

// TestTmuxSpareLauncher: on tmux, once a confined agent ran, a spare launcher waits in a
// session of its own; the next confined agent is launched in it (its pid is the spare's)
// and sees what the first one, launched in a pane of its own, saw: the same environment
// (but its own pane and agent), folder, window size, window options, and it cannot write
// outside its folder. The spare is never an agent (agent ls), a new one waits after the
// launch, and the server's stop ends it. Without the spare no session "spare" appears.
func TestTmuxSpareLauncher(t *testing.T) {
	s := newSpareEnv(t)
	s.serve()
	s.must("agent", "run", "box/a", "--sandbox", "--cwd", s.work, "--", "sh", "-c", spareProbe(s.outside, "a"))
	a := s.probe(t, "a")
	spare := s.readySpare(t)

	s.must("agent", "run", "box/b", "--sandbox", "--cwd", s.work, "--", "sh", "-c", spareProbe(s.outside, "b"))
	b := s.probe(t, "b")
	ag := startedAgent(t, s, "box/b")
	if ag.PID != spare {
		t.Fatalf("box/b runs as pid %d, the spare launcher was %d", ag.PID, spare)
	}
	agA := startedAgent(t, s, "box/a")
	differ := map[string]bool{"TMUX_PANE": true, "ORCR_ID": true, "ORCR_PATH": true, "ORCR_NAME": true}
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var sorted []string
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		_, inA := a[k]
		_, inB := b[k]
		if a[k] != b[k] && inA == inB && (differ[k] || strings.Contains(a[k], agA.ID)) {
			t.Logf("%s differs as it should: %q, %q", k, a[k], b[k])
			continue
		}
		if inA != inB || a[k] != b[k] {
			t.Errorf("%s: normal launch %q (set %v), spare %q (set %v)", k, a[k], inA, b[k], inB)
		}
	}
	if a["outside"] != "no" || b["outside"] != "no" {
		t.Errorf("wrote outside its folder: normal %s, spare %s", a["outside"], b["outside"])
	}
	if a["TMUX_PANE"] != agA.PaneID || b["TMUX_PANE"] != ag.PaneID {
		t.Errorf("TMUX_PANE %s %s, panes %s %s", a["TMUX_PANE"], b["TMUX_PANE"], agA.PaneID, ag.PaneID)
	}
	win := func(pane string) string {
		out, err := s.tmux("display-message", "-p", "-t", pane, "#{session_name} #{window_name} #{window_width}x#{window_height}")
		if err != nil {
			t.Fatal(err)
		}
		opts, err := s.tmux("show-options", "-w", "-t", pane)
		if err != nil {
			t.Fatal(err)
		}
		return out + " [" + opts + "]"
	}
	if wa, wb := win(agA.PaneID), win(ag.PaneID); wa != strings.Replace(wb, "box/b", "box/a", 1) || !strings.HasPrefix(wb, "orcr box/b ") {
		t.Errorf("windows: normal %q, spare %q", wa, wb)
	}
	next := s.readySpare(t)
	if next == spare {
		t.Fatalf("the spare taken is still the spare")
	}
	ls := s.must("agent", "ls")
	if strings.Count(ls, "box/") != 2 || strings.Contains(ls, strconv.Itoa(next)) {
		t.Errorf("agent ls:\n%s", ls)
	}
	if t.Failed() {
		t.Fatalf("normal %v\nspare %v", a, b)
	}
	s.srv.Stop()
	s.srv = nil
	wait.For(t, 10*time.Second, "the spare ended with the server", func() bool {
		return len(s.sparePIDs()) == 0 && syscallGone(next)
	})
}

// syscallGone reports whether pid is gone (or a zombie no one reaps yet).
func syscallGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] == "Z"
}

// TestTmuxSpareAfterKill9: a server killed with kill -9 leaves its spare launcher; the
// next server ends it (no spare window is left, nor shown as an agent), and its
// confined launches still work (the first through a pane of its own, then a spare).
func TestTmuxSpareAfterKill9(t *testing.T) {
	s := newSpareEnv(t)
	s.serve()
	s.must("agent", "run", "box/a", "--sandbox", "--cwd", s.work, "--", "sh", "-c", spareProbe(s.outside, "a"))
	s.probe(t, "a")
	old := s.readySpare(t)
	s.kill9()
	s.serve()
	wait.For(t, 10*time.Second, "the old spare gone", func() bool { return len(s.sparePIDs()) == 0 && syscallGone(old) })
	if ls := s.must("agent", "ls"); strings.Count(ls, "box/") != 1 {
		t.Errorf("agent ls after the restart:\n%s", ls)
	}
	s.must("agent", "run", "box/b", "--sandbox", "--cwd", s.work, "--", "sh", "-c", spareProbe(s.outside, "b"))
	if b := s.probe(t, "b"); b["outside"] != "no" {
		t.Errorf("box/b wrote outside its folder")
	}
	spare := s.readySpare(t)
	s.must("agent", "run", "box/c", "--sandbox", "--cwd", s.work, "--", "sh", "-c", spareProbe(s.outside, "c"))
	if c := s.probe(t, "c"); c["outside"] != "no" {
		t.Errorf("box/c wrote outside its folder")
	}
	if ag := startedAgent(t, s, "box/c"); ag.PID != spare {
		t.Errorf("box/c runs as pid %d, the spare launcher was %d", ag.PID, spare)
	}
}

// TestTmuxSpareBurst: confined spawns at once, with no spare ready for most of them,
// all start confined; one spare waits afterwards.
func TestTmuxSpareBurst(t *testing.T) {
	s := newSpareEnv(t)
	s.serve()
	var wg sync.WaitGroup
	names := []string{"p0", "p1", "p2", "p3", "p4"}
	for _, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := s.orcr("agent", "run", "burst/"+n, "--sandbox", "--cwd", s.work, "--", "sh", "-c", spareProbe(s.outside, n)); r.Code != 0 {
				t.Errorf("run %s: %d %s", n, r.Code, r.Err)
			}
		}()
	}
	wg.Wait()
	for _, n := range names {
		if p := s.probe(t, n); p["outside"] != "no" || p["cwd"] != s.work {
			t.Errorf("%s: %v", n, p)
		}
	}
	s.readySpare(t)
	if ls := s.must("agent", "ls"); strings.Count(ls, "burst/") != len(names) {
		t.Errorf("agent ls:\n%s", ls)
	}
}

// TestTmuxSpareTwoAtOnce: two spare launchers wait, so two confined spawns in a row —
// the second within a launcher's start of the first — both run in a spare started
// before them (with one spare the second waited for the spare started by the first,
// or took a pane of its own).
func TestTmuxSpareTwoAtOnce(t *testing.T) {
	s := newSpareEnv(t)
	s.serve()
	s.must("agent", "run", "box/a", "--sandbox", "--cwd", s.work, "--", "sh", "-c", spareProbe(s.outside, "a"))
	s.probe(t, "a")
	s.readySpare(t)
	before := s.sparePIDs()
	for _, n := range []string{"b", "c"} {
		s.must("agent", "run", "box/"+n, "--sandbox", "--cwd", s.work, "--", "sh", "-c", spareProbe(s.outside, n))
	}
	for i, n := range []string{"b", "c"} {
		if p := s.probe(t, n); p["outside"] != "no" || p["cwd"] != s.work {
			t.Errorf("box/%s: %v", n, p)
		}
		if ag := startedAgent(t, s, "box/"+n); ag.PID != before[i] {
			t.Errorf("box/%s runs as pid %d, the spares waiting were %v", n, ag.PID, before)
		}
	}
	s.readySpare(t)
}
