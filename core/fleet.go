package core

// This file holds the fleet's views (the queue, usage) and how a schedule's command is
// executed; the queue's logic is in queue.go, GC in gc.go, schedules in schedule.go.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"orcr/core/wire"
)

// Queue shows queued agents against the caps, in admission order, each with why it
// is still waiting.
func (e *Engine) Queue(ctx context.Context) (wire.QueueResult, error) {
	e.mu.Lock()
	e.loadQueueLocked()
	lim := e.limits
	res := wire.QueueResult{Global: lim.Global, Caps: map[string]int{}, MinFreeMB: lim.MinFreeMB,
		Running: map[string]int{}}
	for k, v := range lim.Provider {
		res.Caps[k] = v
	}
	running, total := e.runningLocked()
	for k, v := range running {
		res.Running[k] = v
	}
	res.Total = total
	held := e.memHoldLocked(lim)
	pos := 0
	for _, en := range e.fl.q.items {
		rt := en.rt
		if rt.a.State != wire.StateQueued {
			continue
		}
		pos++
		why := "next in line"
		c := lim.Provider[rt.a.Provider]
		switch {
		case held != "":
			why = held
		case lim.Global > 0 && total >= lim.Global:
			why = "global cap " + strconv.Itoa(lim.Global) + " reached"
		case c > 0 && running[rt.a.Provider] >= c:
			why = rt.a.Provider + " cap " + strconv.Itoa(c) + " reached"
		default:
			// Admission would take this one next: count it so later entries see the
			// caps as they will be.
			running[rt.a.Provider]++
			total++
		}
		res.Entries = append(res.Entries, wire.QueueEntry{Pos: pos, AgentID: rt.a.ID, Path: rt.a.Path,
			Provider: rt.a.Provider, Priority: rt.a.Priority, QueuedAt: rt.a.CreatedAt, Waiting: why})
	}
	read := e.fl.freeMB
	e.mu.Unlock()
	if read == nil {
		read = FreeMemoryMB
	}
	res.FreeMB = read()
	return res, nil
}

// FreeMemoryMB reads MemAvailable from /proc/meminfo (-1 when unknown).
func FreeMemoryMB() int {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "MemAvailable:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.Atoi(f[1])
				return kb / 1024
			}
		}
	}
	return -1
}

// Usage reports tokens and cost by provider, model and window.
func (e *Engine) Usage(ctx context.Context, p wire.UsageParams) (wire.UsageResult, error) {
	e.mu.Lock()
	agents := e.currentLocked(true)
	e.mu.Unlock()
	var readings []wire.LimitReading
	err := e.store.Scan(ctx, "limits", func(_ string, v []byte) bool {
		var r wire.LimitReading
		if json.Unmarshal(v, &r) == nil {
			readings = append(readings, r)
		}
		return true
	})
	if err != nil {
		return wire.UsageResult{}, err
	}
	if e.opts.UsageReport == nil {
		return wire.UsageResult{Readings: readings}, nil
	}
	return e.opts.UsageReport(agents, readings, p), nil
}

// execSchedule runs a schedule's command directly (no shell unless the command is one)
// in its captured cwd and environment, and returns the finished run.
func (e *Engine) execSchedule(ctx context.Context, s wire.Schedule, run wire.ScheduleRun) wire.ScheduleRun {
	env := make([]string, 0, len(s.Env)+2)
	for k, v := range s.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	env = append(env, "ORCR_SOCKET="+e.opts.Socket)
	if e.opts.Home != "" {
		env = append(env, "ORCR_HOME="+e.opts.Home)
	}
	end := func(r wire.ScheduleRun) wire.ScheduleRun {
		t := e.now()
		r.EndedAt = &t
		return r
	}
	bin, err := resolveCommand(s.Command[0], s.Cwd, s.Env["PATH"])
	if err != nil {
		run.Error = err.Error()
		return end(run)
	}
	cmd := exec.CommandContext(ctx, bin, s.Command[1:]...)
	cmd.Args[0] = s.Command[0]
	cmd.Dir = s.Cwd
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
