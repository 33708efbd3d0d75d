package tmux

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// ErrServerGone reports that the control connection to the tmux server ended (the
// server was killed or exited). The next call reconnects, starting a server if needed.
var ErrServerGone = errors.New("lost the connection to the tmux server (killed or exited); the next call reconnects")

// reply is the output of one command: its lines, or the error tmux printed.
type reply struct {
	lines []string
	err   error
}

// request waits for the reply of one command line sent through the control client.
type request struct {
	done chan reply // buffered: the reader never blocks on an abandoned request
}

// control is one long-lived `tmux -C attach` client. Commands are written to its stdin
// and their %begin/%end blocks come back in the order they were sent, so replies are
// matched to requests by a FIFO; everything outside a block is a notification.
type control struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser

	mu      sync.Mutex // guards stdin writes, pending, err, size and env
	pending []*request
	err     error  // set once the reader ended
	size    string // the session's default-size as last set through this client
	// env is the orcr session's environment as configure set it: every window made
	// there starts from it, so a launch passes (-e) only what differs (sessionenv.go).
	env map[string]string

	ready  chan struct{} // closed when the client is attached
	done   chan struct{} // closed when the reader ended
	notify func(line []byte)
}

// startControl starts `tmux -S socket -C attach -t session` and waits until it is
// attached. notify receives every notification line (without the trailing newline); it
// runs on the reader goroutine and must not block on the control client.
func startControl(ctx context.Context, bin, socket, session string, notify func([]byte)) (*control, error) {
	cmd := exec.Command(bin, "-u", "-S", socket, "-C", "attach", "-t", session)
	cmd.Env = clientEnv()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("control client stdin: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("control client stdout: %w", err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start control client: %w", err)
	}
	c := &control{
		cmd: cmd, stdin: stdin, notify: notify,
		ready: make(chan struct{}), done: make(chan struct{}),
	}
	go c.read(stdout, &stderr)
	select {
	case <-c.ready:
		return c, nil
	case <-c.done:
		return nil, c.closedErr()
	case <-ctx.Done():
		c.close(time.Second)
		return nil, fmt.Errorf("attach control client: %w", ctx.Err())
	}
}

// clientEnv is the environment of every tmux process orcr starts: nothing of the
// caller's (no TMUX, no user variables that would end up in the server's global
// environment), just a UTF-8 locale.
func clientEnv() []string {
	return []string{"LANG=C.UTF-8"}
}

// read owns the reader goroutine: it parses blocks and notifications until the client
// exits, then fails every pending request.
func (c *control) read(stdout io.Reader, stderr *bytes.Buffer) {
	c.parse(stdout)
	_ = c.cmd.Wait()
	msg := strings.TrimSpace(stderr.String())
	c.mu.Lock()
	if msg != "" {
		c.err = fmt.Errorf("%w: %s", ErrServerGone, msg)
	} else {
		c.err = ErrServerGone
	}
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	for _, r := range pending {
		r.done <- reply{err: c.err}
	}
	close(c.done)
}

// parse reads the control-mode stream until it ends: %begin/%end/%error blocks
// answer our commands in order (flags 1), everything else is a notification.
func (c *control) parse(stdout io.Reader) {
	br := bufio.NewReaderSize(stdout, 64<<10)
	var (
		inBlock bool
		mine    bool   // the block answers one of our commands (flags 1)
		tag     []byte // "<time> <number>" of the open block
		lines   []string
		long    []byte
	)
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long[:0], line...)
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil {
			break
		}
		line = bytes.TrimSuffix(line[:len(line)-1], []byte("\r"))
		if inBlock {
			if t, ok := blockEnd(line); ok && bytes.Equal(t, tag) {
				inBlock = false
				if mine {
					var r reply
					if bytes.HasPrefix(line, []byte("%error")) {
						r.err = fmt.Errorf("tmux: %s", strings.Join(lines, "; "))
					} else {
						r.lines = lines
					}
					c.deliver(r)
				}
				lines = nil
				continue
			}
			if mine {
				lines = append(lines, string(line))
			}
			continue
		}
		if rest, ok := bytes.CutPrefix(line, []byte("%begin ")); ok {
			inBlock = true
			fields := bytes.Fields(rest)
			mine = len(fields) == 3 && fields[2][0] == '1'
			if len(fields) >= 2 {
				tag = append(tag[:0], fields[0]...)
				tag = append(tag, ' ')
				tag = append(tag, fields[1]...)
			}
			continue
		}
		if bytes.HasPrefix(line, []byte("%session-changed ")) {
			select {
			case <-c.ready:
			default:
				close(c.ready)
			}
		}
		if c.notify != nil {
			c.notify(line)
		}
	}
}

// blockEnd returns the "<time> <number>" tag of a %end or %error line.
func blockEnd(line []byte) ([]byte, bool) {
	var rest []byte
	var ok bool
	if rest, ok = bytes.CutPrefix(line, []byte("%end ")); !ok {
		if rest, ok = bytes.CutPrefix(line, []byte("%error ")); !ok {
			return nil, false
		}
	}
	i := bytes.LastIndexByte(rest, ' ')
	if i < 0 {
		return nil, false
	}
	return rest[:i], true
}

// deliver hands r to the oldest pending request.
func (c *control) deliver(r reply) {
	c.mu.Lock()
	if len(c.pending) == 0 {
		c.mu.Unlock()
		return
	}
	req := c.pending[0]
	c.pending[0] = nil
	c.pending = c.pending[1:]
	c.mu.Unlock()
	req.done <- r
}

// closedErr is the reason the client ended.
func (c *control) closedErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		return ErrServerGone
	}
	return c.err
}

// send writes command lines in one write and returns one request per line, in order.
// Each line must hold exactly one tmux command (one %begin/%end block).
func (c *control) send(lines ...string) ([]*request, error) {
	var b strings.Builder
	reqs := make([]*request, len(lines))
	for i, l := range lines {
		if strings.ContainsAny(l, "\n\r") {
			return nil, fmt.Errorf("tmux: command line with a newline")
		}
		b.WriteString(l)
		b.WriteByte('\n')
		reqs[i] = &request{done: make(chan reply, 1)}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return nil, c.err
	}
	c.pending = append(c.pending, reqs...)
	if _, err := io.WriteString(c.stdin, b.String()); err != nil {
		c.pending = c.pending[:len(c.pending)-len(reqs)]
		return nil, fmt.Errorf("%w: write: %v", ErrServerGone, err)
	}
	return reqs, nil
}

// sendLaunch sends a launch's window line, preceded by setOption when the session's
// default-size (last set through this client) is not size: one command fewer per
// launch when sizes repeat, as they mostly do. line gets the variables the window
// needs beside the session's environment (add, each NAME=VALUE) and those of it the
// window must not have (unset). The size's check, the line and the write happen
// under one lock, so no launch of another size comes between a size and its window.
// The first reply is the option's when one was sent.
func (c *control) sendLaunch(size, setOption string, env []string, line func(add, unset []string) string) ([]*request, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return nil, false, c.err
	}
	add, unset := envDiff(c.env, env)
	lines := []string{line(add, unset)}
	set := c.size != size
	if set {
		lines = append([]string{setOption}, lines...)
	}
	var b strings.Builder
	reqs := make([]*request, len(lines))
	for i, l := range lines {
		if strings.ContainsAny(l, "\n\r") {
			return nil, false, fmt.Errorf("tmux: command line with a newline")
		}
		b.WriteString(l)
		b.WriteByte('\n')
		reqs[i] = &request{done: make(chan reply, 1)}
	}
	c.pending = append(c.pending, reqs...)
	if _, err := io.WriteString(c.stdin, b.String()); err != nil {
		c.pending = c.pending[:len(c.pending)-len(reqs)]
		return nil, false, fmt.Errorf("%w: write: %v", ErrServerGone, err)
	}
	c.size = size
	return reqs, set, nil
}

// forgetSize makes the next sendLaunch set the size again (after a failed set).
func (c *control) forgetSize() {
	c.mu.Lock()
	c.size = ""
	c.mu.Unlock()
}

// wait returns the reply of r, or ctx's error. An abandoned request stays queued so
// later replies still match their requests. A context already done is the answer even
// when the reply is in too (a select between two ready cases picks either).
func (r *request) wait(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case rep := <-r.done:
		return rep.lines, rep.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// run sends one command and waits for its output.
func (c *control) run(ctx context.Context, line string) ([]string, error) {
	reqs, err := c.send(line)
	if err != nil {
		return nil, err
	}
	return reqs[0].wait(ctx)
}

// alive reports whether the reader is still running.
func (c *control) alive() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// close detaches the client (EOF on stdin) and waits up to grace for it to exit,
// killing it after that.
func (c *control) close(grace time.Duration) {
	_ = c.stdin.Close()
	select {
	case <-c.done:
		return
	case <-time.After(grace):
	}
	if c.cmd.Process != nil {
		_ = c.cmd.Process.Kill()
	}
	<-c.done
}
