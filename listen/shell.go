package listen

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// ShellSource runs a listener's command with sh -c each tick. Every stdout line is an
// event: a JSON object with an "id" (its top-level fields become vars), or else the
// line itself (id and var "line"). A command that exits non-zero or outlives its
// timeout yields no events (half an answer must not trigger work); its process group
// is killed at the timeout so a hanging pipeline cannot linger.
type ShellSource struct {
	Command string
	Timeout time.Duration // default 1 m
	Dir     string
	Env     []string // added to the server's environment
}

// Output bounds: a line longer than maxShellLine is garbage, output past
// maxShellOutput is not read.
const (
	maxShellLine   = 64 << 10
	maxShellOutput = 4 << 20
	maxShellIDLen  = 200
	maxGarbageKept = 5
)

// ShellRun is what one run produced.
type ShellRun struct {
	Events    []Event
	Garbage   int      // lines that were neither a plain line nor a JSON object with an id
	Samples   []string // the first few of them, shortened
	ExitCode  int
	Stderr    string // its tail
	Truncated bool   // output past maxShellOutput was not read
}

// Warning summarises garbage for a listener's record ("" when there was none).
func (r ShellRun) Warning() string {
	var parts []string
	if r.Garbage > 0 {
		parts = append(parts, fmt.Sprintf("%d unreadable output line(s), e.g. %q", r.Garbage, r.Samples[0]))
	}
	if r.Truncated {
		parts = append(parts, fmt.Sprintf("output past %d MiB ignored", maxShellOutput>>20))
	}
	return strings.Join(parts, "; ")
}

// Run runs the command once.
func (s ShellSource) Run(ctx context.Context) (ShellRun, error) {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", s.Command)
	cmd.Dir = s.Dir
	if len(s.Env) > 0 {
		cmd.Env = append(cmd.Environ(), s.Env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	// Output goes to buffers exec copies into, not a pipe read here, so WaitDelay can
	// end the wait even if something the command started keeps stdout open.
	var stdout capBuffer
	var stderr tailBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return ShellRun{}, fmt.Errorf("shell source: %w", err)
	}
	werr := cmd.Wait()
	out := stdout.b
	if stdout.dropped {
		out = out[:bytes.LastIndexByte(out, '\n')+1] // the last line was cut: not an event
	}
	run := parseShellOutput(bytes.NewReader(out))
	run.Truncated = stdout.dropped
	run.Stderr = strings.TrimSpace(stderr.String())
	if errors.Is(ctx.Err(), context.Canceled) {
		return ShellRun{}, fmt.Errorf("shell source: %w", ctx.Err())
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ShellRun{Garbage: run.Garbage, Samples: run.Samples, ExitCode: -1, Stderr: run.Stderr},
			fmt.Errorf("shell source: %q killed after its %s timeout", s.Command, timeout)
	}
	if werr != nil {
		var ee *exec.ExitError
		if errors.As(werr, &ee) {
			run.ExitCode = ee.ExitCode()
			msg := fmt.Sprintf("shell source: %q exited %d", s.Command, run.ExitCode)
			if run.Stderr != "" {
				msg += ": " + lastLine(run.Stderr)
			}
			run.Events = nil
			return run, errors.New(msg)
		}
		return ShellRun{}, fmt.Errorf("shell source: %w", werr)
	}
	return run, nil
}

func parseShellOutput(r io.Reader) ShellRun {
	var run ShellRun
	seen := map[string]bool{}
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, tooLong, err := readLine(br)
		if err != nil {
			break
		}
		text := strings.TrimSpace(line)
		if text == "" {
			continue
		}
		ev, ok := shellEvent(text)
		if tooLong || !ok {
			run.Garbage++
			if len(run.Samples) < maxGarbageKept {
				run.Samples = append(run.Samples, shorten(text, 80))
			}
			continue
		}
		if seen[ev.ID] {
			continue
		}
		seen[ev.ID] = true
		run.Events = append(run.Events, ev)
	}
	return run
}

// readLine reads one line of at most maxShellLine bytes; a longer one is consumed and
// reported as too long.
func readLine(br *bufio.Reader) (string, bool, error) {
	var b []byte
	tooLong := false
	for {
		chunk, isPrefix, err := br.ReadLine()
		if err != nil {
			if len(b) > 0 || tooLong {
				return string(b), tooLong, nil
			}
			return "", false, err
		}
		if len(b)+len(chunk) > maxShellLine {
			tooLong = true
		} else {
			b = append(b, chunk...)
		}
		if !isPrefix {
			return string(b), tooLong, nil
		}
	}
}

// shellEvent reads one line as an event.
func shellEvent(text string) (Event, bool) {
	if !utf8.ValidString(text) || strings.ContainsFunc(text, func(r rune) bool { return r < 0x20 && r != '\t' }) {
		return Event{}, false
	}
	if !strings.HasPrefix(text, "{") {
		return Event{ID: eventID(text), Vars: map[string]string{"line": text}}, true
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var obj map[string]json.RawMessage
	if err := dec.Decode(&obj); err != nil || dec.More() {
		return Event{}, false
	}
	rawID, ok := obj["id"]
	if !ok {
		return Event{}, false
	}
	id := scalar(rawID)
	if id == "" || strings.HasPrefix(id, "{") || strings.HasPrefix(id, "[") {
		return Event{}, false
	}
	vars := map[string]string{"line": text}
	for k, v := range obj {
		if validVarName(k) {
			vars[k] = scalar(v)
		}
	}
	return Event{ID: eventID(id), Vars: vars}, true
}

// scalar renders a JSON value as a template var: strings unquoted, null empty, other
// values as their compact JSON.
func scalar(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if string(raw) == "null" {
		return ""
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil {
		return buf.String()
	}
	return string(raw)
}

// eventID keeps ids short enough for store keys: a long one becomes its hash.
func eventID(s string) string {
	if len(s) <= maxShellIDLen {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// capBuffer keeps the first maxShellOutput bytes written to it and discards the rest.
type capBuffer struct {
	b       []byte
	dropped bool
}

func (c *capBuffer) Write(p []byte) (int, error) {
	room := maxShellOutput - len(c.b)
	if room < len(p) {
		c.dropped = true
	}
	if room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// tailBuffer keeps the last 4 KiB written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }
