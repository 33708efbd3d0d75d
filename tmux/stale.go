package tmux

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// closeStaleClients detaches the control clients of orcr's tmux server that an earlier orcr
// server started and left behind. After a kill -9 some stayed attached, re-parented to init,
// forever (5 after 25 kills): each one is a process, and a client tmux keeps sizing windows
// for and sending every pane's output to. Only clients whose command line is orcr's own
// `tmux -S <this socket> -C attach` are touched; a user's clients are left alone.
func (h *Host) closeStaleClients(ctx context.Context, c *control) {
	lines, err := c.run(ctx, "list-clients -F "+quote("#{client_pid} #{client_control_mode} #{client_name}"))
	if err != nil {
		h.log.Warn("tmux: list clients", "err", err)
		return
	}
	self := c.cmd.Process.Pid
	n := 0
	for _, l := range lines {
		f := strings.SplitN(l, " ", 3)
		if len(f) != 3 || f[1] != "1" {
			continue
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil || pid == self || !orcrControlClient(pid, h.socket) {
			continue
		}
		if _, err := c.run(ctx, "detach-client -t "+quote(f[2])); err != nil {
			h.log.Warn("tmux: detach stale control client", "pid", pid, "err", err)
		}
		// Detached, it exits by itself; a client too wedged to do so is ended.
		_ = syscall.Kill(pid, syscall.SIGTERM)
		n++
	}
	if n > 0 {
		h.log.Info("tmux: closed control clients a previous server left attached", "count", n)
	}
}

// orcrControlClient reports whether pid runs orcr's control client on socket, from its
// command line (Linux /proc; elsewhere nothing is recognised, so nothing is closed).
func orcrControlClient(pid int, socket string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := bytes.Split(bytes.TrimRight(b, "\x00"), []byte{0})
	var sock, control, attach bool
	for i, a := range args {
		switch string(a) {
		case "-S":
			sock = sock || i+1 < len(args) && string(args[i+1]) == socket
		case "-C":
			control = true
		case "attach", "attach-session":
			attach = true
		}
	}
	return sock && control && attach
}
