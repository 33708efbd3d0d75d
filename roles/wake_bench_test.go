package roles_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/modelserver"
	"orcr/testutil/wait"
)

// BenchmarkHibernatedSend measures hibernated → `orcr agent send` → the provider's
// first model request, against `claude --resume SESSION 'text'` started by hand in
// tmux with the same environment, in the same run, and reports the ratio of the
// medians (target ≤ 1.2). Run: go test ./roles/ -run '^$' -bench HibernatedSend -benchtime 1x
func BenchmarkHibernatedSend(b *testing.B) {
	if _, err := exec.LookPath("tmux"); err != nil {
		b.Skip("tmux not installed")
	}
	r := newClaudeRigTB(b)
	os.MkdirAll(filepath.Join(r.Dir, "config", "orcr"), 0o700)
	os.WriteFile(filepath.Join(r.Dir, "config", "orcr", "config.toml"), []byte("[gc]\nidle_after = \"1s\"\nidle_action = \"hibernate\"\n"), 0o600)
	r.Serve()
	r.Models.SetDefault(modelserver.Turn{Text: "ok", Usage: modelserver.Usage{Input: 1, Output: 1}})
	r.Must("agent", "run", "bench/a", "--provider", "claude", "--prompt", "hello", "--cwd", r.Work)
	a := r.WaitAgent("bench/a", 90*time.Second, "first turn", func(a wire.Agent) bool { return a.State == wire.StateDone })
	sid := a.SessionID
	firstAfter := func(since time.Time, text string) time.Time {
		var at time.Time
		if !wait.Until(60*time.Second, func() bool {
			for _, q := range r.Models.Requests() {
				if q.At.After(since) && strings.Contains(string(q.Body), text) && strings.Contains(string(q.Body), `"tools"`) {
					at = q.At
					return true
				}
			}
			return false
		}) {
			b.Fatalf("no request with %q", text)
		}
		return at
	}
	claude := lastEnv(r.Vars, "ORCR_CLAUDE_BIN")
	// sleep waits until the agent is hibernated again (its turn done, then GC).
	sleep := func() {
		if !wait.Until(90*time.Second, func() bool {
			if st := r.Agent("bench/a").State; st == wire.StateHibernated {
				return true
			} else if st == wire.StateDone {
				r.Must("gc")
			}
			return false
		}) {
			b.Fatal("the agent did not hibernate")
		}
	}
	var viaOrcr, byHand []time.Duration
	const rounds = 3
	b.ResetTimer()
	for i := 0; i < b.N*rounds; i++ {
		// orcr: hibernate, then send.
		sleep()
		text := fmt.Sprintf("orcr round %d", i)
		t0 := time.Now()
		r.Must("agent", "send", "bench/a", text)
		viaOrcr = append(viaOrcr, firstAfter(t0, text).Sub(t0))

		// By hand: the same resume in a fresh tmux session, once the agent slept again.
		sleep()
		text = fmt.Sprintf("hand round %d", i)
		sock := filepath.Join(r.Dir, "hand.sock")
		cmd := exec.Command("tmux", "-S", sock, "new-session", "-d", "-x", "200", "-y", "50", "-c", r.Work,
			"env "+shellEnv(r.Vars)+" "+claude+" --resume "+sid+" '"+text+"'")
		t0 = time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("tmux: %v %s", err, out)
		}
		byHand = append(byHand, firstAfter(t0, text).Sub(t0))
		exec.Command("tmux", "-S", sock, "kill-server").Run()
		// The hand-started claude ends with its tmux server; wait, so it writes no
		// more into the config dir the test removes.
		wait.Until(15*time.Second, func() bool { return !running(text) })
	}
	b.StopTimer()
	med := func(ds []time.Duration) time.Duration {
		s := append([]time.Duration(nil), ds...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s[len(s)/2]
	}
	b.ReportMetric(float64(med(viaOrcr).Milliseconds()), "orcr-ms")
	b.ReportMetric(float64(med(byHand).Milliseconds()), "hand-ms")
	b.ReportMetric(float64(med(viaOrcr))/float64(med(byHand)), "ratio")
	b.Logf("orcr %v, by hand %v", viaOrcr, byHand)
}

func lastEnv(env []string, k string) string {
	v := ""
	for _, kv := range env {
		if key, val, ok := strings.Cut(kv, "="); ok && key == k {
			v = val
		}
	}
	return v
}

// shellEnv quotes env for `env K=V …` in a shell command.
func shellEnv(env []string) string {
	q := make([]string, len(env))
	for i, kv := range env {
		q[i] = "'" + strings.ReplaceAll(kv, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// running reports whether a process whose command line contains s runs.
func running(s string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) {
			return true
		}
	}
	return false
}
