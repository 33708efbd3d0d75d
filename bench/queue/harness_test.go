// Package queue holds whole-program load and fault tests of orcr's admission queue and
// schedules: a real `orcr serve` (built by the test), real panes on the tmux host (the
// pty host when tmux is missing), real `kill -9`. The CI-sized runs are plain tests;
// the full-size ones run with ORCR_LONG=1.
package queue

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core/socket"
	"orcr/core/wire"
	"orcr/testutil/apiclient"
	"orcr/testutil/serve"
	"orcr/testutil/testbin"
)

// long reports whether the full-size runs are wanted.
func long() bool { return os.Getenv("ORCR_LONG") != "" }

// hostName is tmux when it is installed, else the embedded pty host.
func hostName() string {
	if h := os.Getenv("ORCR_BENCH_HOST"); h != "" {
		return h
	}
	if _, err := exec.LookPath("tmux"); err == nil {
		return "tmux"
	}
	return "pty"
}

// server is one orcr home with its server process, restartable.
type server struct {
	t      testing.TB
	bin    string
	home   string
	config string
	host   string
	srv    *serve.Server // nil while stopped
	starts int
}

func newServer(t testing.TB, config string) *server {
	t.Helper()
	bin := testbin.Build(t, "orcr")
	// A short home: unix socket paths are limited to ~100 bytes.
	home, err := os.MkdirTemp("", "orcrq")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, bin: bin, home: home, host: hostName(),
		config: filepath.Join(home, "config.toml")}
	if err := os.WriteFile(s.config, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.stop()
		if s.host == "tmux" {
			_ = exec.Command("tmux", "-S", filepath.Join(home, "tmux.sock"), "kill-server").Run()
		}
		if !t.Failed() {
			os.RemoveAll(home)
		} else {
			t.Logf("home kept for inspection: %s", home)
		}
	})
	return s
}

func (s *server) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ORCR_") && !strings.HasPrefix(kv, "TMUX") {
			env = append(env, kv)
		}
	}
	return append(env, "ORCR_HOME="+s.home, "ORCR_CONFIG="+s.config, "ORCR_HOST="+s.host)
}

// start runs `orcr serve` and waits until it answers.
func (s *server) start() {
	s.t.Helper()
	s.starts++
	logf, err := os.OpenFile(filepath.Join(s.home, fmt.Sprintf("serve-%d.out", s.starts)), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		s.t.Fatal(err)
	}
	// Its output stays in the home, one file per start, for inspection.
	s.srv = serve.Start(s.t, serve.Options{Bin: s.bin, Env: s.env(), Output: logf, Timeout: 20 * time.Second, Grace: 15 * time.Second})
	logf.Close()
}

// kill9 kills the server with SIGKILL and waits for it to be gone.
func (s *server) kill9() {
	s.t.Helper()
	if s.srv == nil {
		return
	}
	s.srv.Kill9()
	s.srv = nil
}

// stop ends the server politely.
func (s *server) stop() {
	if s.srv == nil {
		return
	}
	s.srv.Stop()
	s.srv = nil
}

// run runs the orcr binary with this home and returns its combined output.
func (s *server) run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.bin, args...)
	cmd.Env = s.env()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (s *server) dial(ctx context.Context) *apiclient.Client {
	s.t.Helper()
	cl, err := apiclient.Dial(ctx, socket.SocketPath(s.home), "")
	if err != nil {
		s.t.Fatal(err)
	}
	return cl
}

// allEvents reads the whole stored event log (events.subscribe after=0) up to the
// server's last seq.
func (s *server) allEvents(ctx context.Context) []wire.Event {
	s.t.Helper()
	cl := s.dial(ctx)
	defer cl.Close()
	info, err := cl.Info(ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	ch, err := cl.Subscribe(ctx, wire.SubscribeParams{})
	if err != nil {
		s.t.Fatal(err)
	}
	var out []wire.Event
	for ev := range ch {
		out = append(out, ev)
		if ev.Seq >= info.LastSeq {
			return out
		}
	}
	s.t.Fatalf("event stream ended at %d events, before seq %d", len(out), info.LastSeq)
	return nil
}

// startsLog reads the file every job appends its ORCR_ID to when it starts.
func startsLog(t testing.TB, path string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return map[string]int{}
		}
		t.Fatal(err)
	}
	defer f.Close()
	n := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if id := strings.TrimSpace(sc.Text()); id != "" {
			n[id]++
		}
	}
	return n
}

// job is the fake agent: it records its start, then works for d.
func job(startsFile string, d time.Duration) []string {
	return []string{"sh", "-c", fmt.Sprintf("echo $ORCR_ID >> %s; sleep %.3f", startsFile, d.Seconds())}
}
