package hosttest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"orcr/core"
)

// Deadlines of the suite: generous, because two cores are shared by many test binaries.
const (
	shortWait = 10 * time.Second
	longWait  = 30 * time.Second
)

// harness is one host under test plus a recorder of its events. The recorder drains
// Events so a host whose channel fills up is never the reason a case fails.
type harness struct {
	t    *testing.T
	host core.Host

	mu     sync.Mutex
	events []core.HostEvent
	done   chan struct{}
	once   sync.Once
}

// newHarness builds a host from f and shuts it down when the test ends.
func newHarness(t *testing.T, f Factory) *harness {
	t.Helper()
	h := attach(t, f.New(t))
	t.Cleanup(func() { h.shutdown() })
	return h
}

// attach starts recording the events of host.
func attach(t *testing.T, host core.Host) *harness {
	t.Helper()
	if host == nil {
		t.Fatal("hosttest: factory returned a nil host")
	}
	h := &harness{t: t, host: host, done: make(chan struct{})}
	go h.record()
	return h
}

// record owns the drain goroutine; it ends when Shutdown closes the channel.
func (h *harness) record() {
	defer close(h.done)
	for ev := range h.host.Events() {
		h.mu.Lock()
		h.events = append(h.events, ev)
		h.mu.Unlock()
	}
}

// shutdown stops the host and waits for its event channel to close; only the first
// call does anything.
func (h *harness) shutdown() {
	h.t.Helper()
	h.once.Do(h.shutdownOnce)
}

func (h *harness) shutdownOnce() {
	c, cancel := context.WithTimeout(context.Background(), longWait)
	defer cancel()
	if err := h.host.Shutdown(c); err != nil {
		h.t.Errorf("shutdown: %v", err)
	}
	select {
	case <-h.done:
	case <-time.After(longWait):
		h.t.Errorf("events channel not closed %v after Shutdown", longWait)
	}
}

// exitEvent returns the PaneExited event of pane, if one arrived.
func (h *harness) exitEvent(pane string) (core.HostEvent, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ev := range h.events {
		if ev.Pane == pane && ev.Kind == core.PaneExited {
			return ev, true
		}
	}
	return core.HostEvent{}, false
}

// baseEnv is the complete environment the suite gives its panes: the test process's
// PATH and nothing it did not choose, so leaks from the server's environment show.
func baseEnv(extra ...string) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"TERM=xterm-256color",
		"LANG=C.UTF-8",
		"LC_ALL=C.UTF-8",
	}
	return append(env, extra...)
}

// launch starts argv in a 200x50 pane with the base environment and t's temp dir.
func (h *harness) launch(argv ...string) core.PaneInfo {
	h.t.Helper()
	return h.launchSpec(core.LaunchSpec{Argv: argv})
}

// launchSpec fills the blanks of spec with the suite's defaults and launches it.
func (h *harness) launchSpec(spec core.LaunchSpec) core.PaneInfo {
	h.t.Helper()
	if spec.Name == "" {
		spec.Name = "hosttest/" + strings.ToLower(strings.ReplaceAll(h.t.Name(), "/", "-"))
	}
	if spec.Cwd == "" {
		spec.Cwd = h.t.TempDir()
	}
	if spec.Env == nil {
		spec.Env = baseEnv()
	}
	if spec.Cols == 0 {
		spec.Cols, spec.Rows = 200, 50
	}
	info, err := h.host.Launch(ctx(h.t), spec)
	if err != nil {
		h.t.Fatalf("launch %q: %v", spec.Argv, err)
	}
	if info.ID == "" {
		h.t.Fatalf("launch %q: empty pane id", spec.Argv)
	}
	return info
}

// read returns the screen of pane (or scrollback tail with lines > 0).
func (h *harness) read(pane string, lines int) (core.Screen, error) {
	return h.host.Read(ctx(h.t), pane, core.ReadOpts{Lines: lines})
}

// waitScreen polls Read until cond holds for the text and returns that screen.
func (h *harness) waitScreen(pane string, lines int, what string, cond func(text string) bool) core.Screen {
	h.t.Helper()
	var last core.Screen
	waitFor(h.t, shortWait, what, func() (bool, string) {
		s, err := h.read(pane, lines)
		if err != nil {
			return false, "read error: " + err.Error()
		}
		last = s
		return cond(s.Text), s.Text
	})
	return last
}

// waitText waits until the screen of pane contains want.
func (h *harness) waitText(pane, want string) core.Screen {
	h.t.Helper()
	return h.waitScreen(pane, 0, fmt.Sprintf("%q on the screen", want), func(text string) bool {
		return strings.Contains(text, want)
	})
}

// sendText types text into pane and fails the test on error.
func (h *harness) sendText(pane, text string) {
	h.t.Helper()
	if err := h.host.SendText(ctx(h.t), pane, text); err != nil {
		h.t.Fatalf("send text %q: %v", text, err)
	}
}

// sendKeys presses keys in pane and fails the test on error.
func (h *harness) sendKeys(pane string, keys ...string) {
	h.t.Helper()
	if err := h.host.SendKeys(ctx(h.t), pane, keys...); err != nil {
		h.t.Fatalf("send keys %v: %v", keys, err)
	}
}

// listed returns the PaneInfo of pane from List, if the host lists it.
func (h *harness) listed(pane string) (core.PaneInfo, bool, error) {
	panes, err := h.host.List(ctx(h.t))
	if err != nil {
		return core.PaneInfo{}, false, err
	}
	i := slices.IndexFunc(panes, func(p core.PaneInfo) bool { return p.ID == pane })
	if i < 0 {
		return core.PaneInfo{}, false, nil
	}
	return panes[i], true, nil
}

// waitExit waits for the PaneExited event of pane and returns its exit code, also
// checking that List agrees when it still lists the pane.
func (h *harness) waitExit(pane string) int {
	h.t.Helper()
	var ev core.HostEvent
	waitFor(h.t, shortWait, "a PaneExited event for "+pane, func() (bool, string) {
		var ok bool
		ev, ok = h.exitEvent(pane)
		h.mu.Lock()
		defer h.mu.Unlock()
		return ok, fmt.Sprintf("%d events so far", len(h.events))
	})
	if ev.ExitCode == nil {
		h.t.Fatalf("PaneExited event of %s has no exit code", pane)
	}
	info, ok, err := h.listed(pane)
	if err != nil {
		h.t.Fatalf("list: %v", err)
	}
	if ok {
		if !info.Dead {
			h.t.Errorf("List shows exited pane %s as alive: %+v", pane, info)
		}
		if info.ExitCode == nil || *info.ExitCode != *ev.ExitCode {
			h.t.Errorf("List exit code of %s = %v, event said %d", pane, info.ExitCode, *ev.ExitCode)
		}
	}
	return *ev.ExitCode
}

// sh returns argv that runs script with /bin/sh semantics, extra args as $1….
func sh(script string, args ...string) []string {
	return append([]string{"sh", "-c", script, "sh"}, args...)
}
