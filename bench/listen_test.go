package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"orcr/github/githubtest"
	"orcr/listen"
	listenapi "orcr/listen/api"
	"orcr/store"
	"orcr/testutil/proc"
	"orcr/testutil/wait"
)

// Listener benchmarks (issue 15's numbers), on the real binary against the fake GitHub,
// with server CPU read from /proc.

func procCPU(b *testing.B, pid int) time.Duration {
	return time.Duration(proc.CPUTicks(b, pid)) * 10 * time.Millisecond // USER_HZ = 100
}

func writeListenerFiles(b *testing.B, home string, files map[string]string, apiURL string) {
	b.Helper()
	dir := filepath.Join(home, "cfg", "orcr")
	if err := os.MkdirAll(filepath.Join(dir, "listeners"), 0o700); err != nil {
		b.Fatal(err)
	}
	cfg := fmt.Sprintf("[github]\napi_url = %q\ntoken = \"tok\"\n", apiURL)
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	for name, doc := range files {
		if err := os.WriteFile(filepath.Join(dir, "listeners", name+".toml"), []byte(doc), 0o600); err != nil {
			b.Fatal(err)
		}
	}
}

func listenerOf(b *testing.B, s *server, name string) listenapi.Listener {
	b.Helper()
	c := s.srv.Client()
	l, err := c.ListenerGet(context.Background(), name)
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// BenchmarkListenerIdleTick1000Issues: a github-issues listener over a repository with
// 1,000 open labelled issues, every one already dispatched (marked processed in the
// store before the server starts, as after a day's work). Each idle tick must be one
// conditional request answered 304 and cost ≤ 50 ms of server CPU (reported as
// cpu-ms/tick: the whole process's CPU over the window divided by its ticks).
func BenchmarkListenerIdleTick1000Issues(b *testing.B) {
	for range b.N {
		b.StopTimer()
		gh := githubtest.New(b, githubtest.WithToken("tok", "bot"))
		gh.AddRepo("acme/big")
		base := time.Now().Add(-48 * time.Hour)
		for i := range 1000 {
			gh.AddIssue("acme/big", githubtest.Issue{Title: "issue " + strconv.Itoa(i), Body: strings.Repeat("x", 200),
				User: "alice", Labels: []string{"orcr"}, CreatedAt: base.Add(time.Duration(i) * time.Minute)})
		}
		home := b.TempDir()
		st, err := store.Open(filepath.Join(home, "store"), nil)
		if err != nil {
			b.Fatal(err)
		}
		rec := listen.NewRecords(st)
		for i := 1; i <= 1000; i++ {
			id := "acme/big#" + strconv.Itoa(i)
			if err := rec.MarkProcessed(context.Background(), "big", id, listen.Processed{At: time.Now(), Target: "done"}); err != nil {
				b.Fatal(err)
			}
		}
		st.Close()
		writeListenerFiles(b, home, map[string]string{"big": `interval = "1s"
[source]
type = "github-issues"
repos = ["acme/big"]
labels = ["orcr"]
[action]
path = "gh/{{number}}"
prompt = "{{title}}"
provider = "shell"
command = "true"
`}, gh.URL)
		s := startServer(b, home)
		// Settle: the first poll reads all ten pages, the next re-reads the newest
		// issue once (since is inclusive); from then on every tick is one 304.
		var l listenapi.Listener
		wait.For(b, 30*time.Second, "three polls", func() bool {
			l = listenerOf(b, s, "big")
			return l.LastPoll != nil && len(gh.Requests()) >= 12
		})
		t0 := *listenerOf(b, s, "big").LastPoll
		wait.For(b, 10*time.Second, "a poll more", func() bool { return listenerOf(b, s, "big").LastPoll.After(t0) })
		gh.ResetRequests()
		pid := s.srv.PID()
		c0, w0 := procCPU(b, pid), time.Now()
		b.StartTimer()
		time.Sleep(20 * time.Second) // the measurement window itself, not a wait for a condition
		b.StopTimer()
		cpu, wall := procCPU(b, pid)-c0, time.Since(w0)
		reqs := gh.Requests()
		for _, q := range reqs {
			if q.Status != 304 || !q.Conditional {
				b.Fatalf("an idle tick sent %+v", q)
			}
		}
		if len(reqs) < 10 {
			b.Fatalf("%d requests in %s", len(reqs), wall)
		}
		if l := listenerOf(b, s, "big"); l.Fires != 0 || l.LastError != "" {
			b.Fatalf("idle listener fired %d, error %q", l.Fires, l.LastError)
		}
		b.ReportMetric(float64(cpu.Milliseconds())/float64(len(reqs)), "cpu-ms/tick")
		b.ReportMetric(float64(len(reqs))/wall.Seconds(), "ticks/s")
		b.ReportMetric(1, "requests/tick")
		s.srv.Stop()
	}
}

// BenchmarkListeners100Idle: 100 github-issues listeners on 10 s intervals (each its
// own repository, nothing new): the whole server's CPU over 30 s must stay ≤ 2 % of a
// core.
func BenchmarkListeners100Idle(b *testing.B) {
	for range b.N {
		b.StopTimer()
		gh := githubtest.New(b, githubtest.WithToken("tok", "bot"))
		files := map[string]string{}
		for i := range 100 {
			repo := fmt.Sprintf("acme/r%03d", i)
			gh.AddRepo(repo)
			gh.AddIssue(repo, githubtest.Issue{Title: "unlabelled", User: "alice"})
			files[fmt.Sprintf("l%03d", i)] = fmt.Sprintf(`interval = "10s"
[source]
type = "github-issues"
repos = [%q]
labels = ["orcr"]
[action]
path = "gh/{{repo}}/{{number}}"
prompt = "{{title}}"
provider = "shell"
command = "true"
`, repo)
		}
		home := b.TempDir()
		writeListenerFiles(b, home, files, gh.URL)
		s := startServer(b, home)
		wait.For(b, 60*time.Second, "every listener polls twice", func() bool {
			ls, err := s.srv.Client().Listeners(context.Background())
			if err != nil || len(ls) != 100 {
				return false
			}
			for _, l := range ls {
				if l.LastPoll == nil || time.Since(*l.LastPoll) > 10*time.Second || l.LastError != "" {
					return false
				}
			}
			return len(gh.Requests()) >= 200
		})
		gh.ResetRequests()
		pid := s.srv.PID()
		c0, w0 := procCPU(b, pid), time.Now()
		b.StartTimer()
		time.Sleep(30 * time.Second) // the measurement window itself, not a wait for a condition
		b.StopTimer()
		cpu, wall := procCPU(b, pid)-c0, time.Since(w0)
		reqs := gh.Requests()
		not304 := 0
		for _, q := range reqs {
			if q.Status != 304 {
				not304++
			}
		}
		if len(reqs) < 250 {
			b.Fatalf("only %d polls in %s", len(reqs), wall)
		}
		b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "cpu-%")
		b.ReportMetric(float64(len(reqs))/wall.Seconds(), "polls/s")
		b.ReportMetric(float64(not304), "non-304")
		s.srv.Stop()
	}
}
