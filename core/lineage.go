package core

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"orcr/core/wire"
)

// callerAgent returns the agent the caller runs inside, after checking the claim:
// the peer process must descend from that agent's pane process. A claim that cannot
// be verified is refused — the environment alone is never trusted.
func (e *Engine) callerAgent(ctx context.Context) (*wire.Agent, error) {
	c, ok := CallerFrom(ctx)
	if !ok || c.ClaimedID == "" {
		if ok && c.Node != "" {
			return nil, &wire.Error{Code: wire.CodeCallerRefused,
				Message: fmt.Sprintf("a call over node %s's link must come from one of its agents (ORCR_ID)", c.Node)}
		}
		return nil, nil
	}
	e.mu.Lock()
	rt, found := e.agents[c.ClaimedID]
	var a wire.Agent
	if found {
		a = rt.a
	}
	e.mu.Unlock()
	if !found {
		return nil, &wire.Error{Code: wire.CodeCallerRefused,
			Message: fmt.Sprintf("ORCR_ID %q names no agent of this server; unset ORCR_ID to act as a root caller", c.ClaimedID)}
	}
	if c.InProcess {
		return &a, nil
	}
	if c.Node != "" {
		// A call over a node's link: the claimed agent must be one placed on that node
		// and not ended (its pane's pids are the node's; the link's socket there is its
		// user's alone).
		if a.Node != c.Node || a.State.Terminal() || a.State == wire.StateQueued {
			return nil, &wire.Error{Code: wire.CodeCallerRefused,
				Message: fmt.Sprintf("a call over node %s's link claims ORCR_ID %s (%s), which is not a running agent of that node", c.Node, a.ID, a.Path)}
		}
		return &a, nil
	}
	if a.State == wire.StateStarting && a.PID <= 0 {
		// The pane's program can call orcr before its launch is recorded.
		a = e.awaitLaunch(ctx, rt)
	}
	if !a.State.Live() || a.PID <= 0 {
		return nil, &wire.Error{Code: wire.CodeCallerRefused,
			Message: fmt.Sprintf("ORCR_ID %s (%s) is %s: only a running agent's processes may act as it", a.ID, a.Path, a.State)}
	}
	if c.PID <= 0 || !descendsFrom(c.PID, a.PID) {
		return nil, &wire.Error{Code: wire.CodeCallerRefused,
			Message: fmt.Sprintf("caller (pid %d) claims ORCR_ID %s (%s) but does not run inside that agent's pane; unset ORCR_ID", c.PID, a.ID, a.Path)}
	}
	return &a, nil
}

// descendsFrom reports whether pid is ancestor or a descendant of it, walking parent
// pids through /proc.
func descendsFrom(pid, ancestor int) bool {
	for i := 0; i < 256 && pid > 1; i++ {
		if pid == ancestor {
			return true
		}
		ppid, err := parentPID(pid)
		if err != nil {
			return false
		}
		pid = ppid
	}
	return pid == ancestor
}

func parentPID(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("read stat: %w", err)
	}
	// The command name may hold spaces and parentheses: fields start after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed stat for %d", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, fmt.Errorf("malformed stat for %d", pid)
	}
	return strconv.Atoi(f[1])
}

// awaitLaunch waits (briefly) until a starting agent's pane pid is recorded.
func (e *Engine) awaitLaunch(ctx context.Context, rt *agentRT) wire.Agent {
	deadline := time.Now().Add(5 * time.Second)
	for {
		e.mu.Lock()
		a := rt.a
		e.mu.Unlock()
		if a.PID > 0 || a.State != wire.StateStarting || time.Now().After(deadline) {
			return a
		}
		select {
		case <-ctx.Done():
			return a
		case <-time.After(10 * time.Millisecond):
		}
	}
}
