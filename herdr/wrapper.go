package herdr

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"orcr/core"
)

// wrapperScript runs "$@" with exactly the given environment (via env -i) plus
// herdr's pane variables, records the exit status as DIR/PANE.PID.exit, and keeps
// the pane (and its last screen) until it is closed. INT/QUIT are trapped, not
// ignored, while the program runs, so the program still gets them (handlers reset
// on exec) while the wrapper survives to record 130. Once the program has exited
// they are ignored: a ctrl-c goes to the pane's whole foreground process group (no
// job control in sh -c), and one pressed while mv recorded the code killed the mv
// (the exit was reported without its code) and one after it killed the wrapper
// (the pane closed with its last screen), where tmux's remain-on-exit keeps both.
const wrapperScript = `d=$1; shift
trap : INT QUIT
env -i -- HERDR_ENV="$HERDR_ENV" HERDR_SOCKET_PATH="$HERDR_SOCKET_PATH" HERDR_BIN_PATH="$HERDR_BIN_PATH" ` +
	`HERDR_WORKSPACE_ID="$HERDR_WORKSPACE_ID" HERDR_TAB_ID="$HERDR_TAB_ID" HERDR_PANE_ID="$HERDR_PANE_ID" "$@"
c=$?
trap '' INT QUIT
f="$d/$HERDR_PANE_ID.$$"
printf '%s\n' "$c" >"$f.tmp" && mv "$f.tmp" "$f.exit"
while :; do sleep 2147483647; done
`

// wrapperMarker is the wrapper's $0; it stays in the pane's process list for the
// pane's whole life, which is how adoption tells orcr's panes from others.
const wrapperMarker = "orcr-pane"

// wrap builds the argv herdr execs for spec.
func (h *Host) wrap(spec core.LaunchSpec) []string {
	argv := []string{"/bin/sh", "-c", wrapperScript, wrapperMarker, h.opts.StateDir}
	for _, kv := range spec.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.HasPrefix(k, "HERDR_") {
			continue // not an assignment, or herdr's own pane variable (set by the wrapper)
		}
		argv = append(argv, kv)
	}
	return append(argv, spec.Argv...)
}

// exitFile is where the wrapper of pane (PTY child pid) records the exit status.
func (h *Host) exitFile(pane string, pid int) string {
	return filepath.Join(h.opts.StateDir, pane+"."+strconv.Itoa(pid)+".exit")
}

func (h *Host) exitCode(pane string, pid int) (int, bool) {
	if pid <= 0 {
		return 0, false
	}
	b, err := os.ReadFile(h.exitFile(pane, pid))
	if err != nil {
		return 0, false
	}
	code, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return code, err == nil
}

// gcExitFiles removes exit files of panes that no longer exist in herdr.
func (h *Host) gcExitFiles() {
	ents, err := os.ReadDir(h.opts.StateDir)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range ents {
		pane, pid, ok := parseExitName(e.Name())
		if !ok {
			continue
		}
		if t := h.panes[pane]; t == nil || t.pid != pid {
			_ = os.Remove(filepath.Join(h.opts.StateDir, e.Name()))
		}
	}
}

func parseExitName(name string) (pane string, pid int, ok bool) {
	base, found := strings.CutSuffix(name, ".exit")
	if !found {
		return "", 0, false
	}
	i := strings.LastIndexByte(base, '.')
	if i <= 0 {
		return "", 0, false
	}
	pid, err := strconv.Atoi(base[i+1:])
	return base[:i], pid, err == nil
}
