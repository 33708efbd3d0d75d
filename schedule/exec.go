package schedule

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	schedapi "orcr/schedule/api"
)

// execSchedule runs a schedule's command directly (no shell unless the command is one)
// in its captured cwd and environment, and returns the finished run.
func (s *Service) exec(ctx context.Context, sc schedapi.Schedule, run schedapi.ScheduleRun) schedapi.ScheduleRun {
	env := make([]string, 0, len(sc.Env)+3)
	for k, v := range sc.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	// ORCR_SCHEDULE names the schedule to what it runs: `orcr workflow run` from a
	// schedule records the schedule as the run's trigger.
	env = append(env, "ORCR_SOCKET="+s.opts.Socket, "ORCR_SCHEDULE="+sc.Name)
	if s.opts.Home != "" {
		env = append(env, "ORCR_HOME="+s.opts.Home)
	}
	end := func(r schedapi.ScheduleRun) schedapi.ScheduleRun {
		t := s.now()
		r.EndedAt = &t
		return r
	}
	bin, err := resolveCommand(sc.Command[0], sc.Cwd, sc.Env["PATH"])
	if err != nil {
		run.Error = err.Error()
		return end(run)
	}
	cmd := exec.CommandContext(ctx, bin, sc.Command[1:]...)
	cmd.Args[0] = sc.Command[0]
	cmd.Dir = sc.Cwd
	cmd.Env = env
	tail := &tailBuffer{max: outputTailMax}
	cmd.Stdout, cmd.Stderr = tail, tail
	// Its own process group, so stopping it stops what it started; and it dies with a
	// crashed server instead of running on unrecorded.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	err = cmd.Run()
	run.OutputTail = tail.String()
	if cmd.ProcessState != nil {
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			run.Error = "killed by signal " + ws.Signal().String()
		} else {
			code := cmd.ProcessState.ExitCode()
			run.ExitCode = &code
		}
	} else if err != nil {
		run.Error = err.Error()
	}
	return end(run)
}

// resolveCommand finds argv[0] the way a shell in cwd with that PATH would.
func resolveCommand(name, cwd, path string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		if err := executable(p); err != nil {
			return "", fmt.Errorf("command %s: %w", name, err)
		}
		return p, nil
	}
	if path == "" {
		path = os.Getenv("PATH")
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(cwd, dir)
		}
		p := filepath.Join(dir, name)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("command %q not found in PATH %s", name, path)
}

func executable(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", p)
	}
	return nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2*t.max {
		t.b = append(t.b[:0:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.b
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	return strings.ToValidUTF8(string(b), "")
}
