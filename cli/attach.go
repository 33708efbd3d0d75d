package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/charmbracelet/x/term"

	"orcr/core/wire"
)

// agentAttach runs the host's native attach, or a raw passthrough on the embedded host
// with ctrl-] to detach.
func (app *app) agentAttach(ctx context.Context, target string) error {
	cl := service(ctx)
	r, err := wire.Attach(ctx, cl, wire.AttachParams{Target: target})
	if err != nil {
		return err
	}
	if len(r.Argv) > 0 {
		cmd := exec.CommandContext(ctx, r.Argv[0], r.Argv[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.Env = withoutVar(os.Environ(), "TMUX")
		return cmd.Run()
	}
	fd := os.Stdin.Fd()
	cols, rows := 0, 0
	if term.IsTerminal(fd) {
		cols, rows, _ = term.GetSize(fd)
		state, err := term.MakeRaw(fd)
		if err != nil {
			return fmt.Errorf("raw terminal: %w", err)
		}
		defer term.Restore(fd, state)
	}
	fmt.Fprintf(app.err, "attached to %s — press ctrl-] to detach\r\n", r.Agent.Path)
	in := newDetachReader(ctx, os.Stdin, 0x1d)
	err = wire.AttachStream(in.ctx, cl, wire.AttachParams{Target: r.Agent.ID, Cols: cols, Rows: rows}, in, app.out)
	// Undo the modes the program may have switched on (alternate screen, hidden cursor,
	// application keys, mouse reporting, bracketed paste, styles) before the shell returns.
	fmt.Fprint(app.out, "\x1b[?1049l\x1b[?25h\x1b[?1l\x1b>\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?2004l\x1b[0m")
	fmt.Fprintf(app.err, "\r\ndetached from %s\r\n", r.Agent.Path)
	return err
}

func withoutVar(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// detachReader passes input through until the detach byte, then ends the attach. It
// also reports terminal resizes (SIGWINCH) to the stream.
type detachReader struct {
	r      io.Reader
	key    byte
	ctx    context.Context
	cancel context.CancelFunc
	sizes  chan [2]int
}

func newDetachReader(ctx context.Context, r io.Reader, key byte) *detachReader {
	ctx, cancel := context.WithCancel(ctx)
	d := &detachReader{r: r, key: key, ctx: ctx, cancel: cancel, sizes: make(chan [2]int, 1)}
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	go func() {
		defer signal.Stop(winch)
		for {
			select {
			case <-winch:
				if c, r, err := term.GetSize(os.Stdin.Fd()); err == nil {
					select {
					case d.sizes <- [2]int{c, r}:
					default:
					}
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return d
}

func (d *detachReader) Resizes() <-chan [2]int { return d.sizes }

func (d *detachReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	for i := 0; i < n; i++ {
		if p[i] == d.key {
			d.cancel()
			return i, io.EOF
		}
	}
	return n, err
}
