package core

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"orcr/core/wire"
)

// A lost agent's process can outlive its pane: the embedded host's panes end with the
// server that held them, and a program that ignores the hang-up keeps running with no
// one watching it — a run's coder committing work that the restarted server has since
// given to another coder. reconcile stops such a process when it marks the agent lost.

// clockTick is USER_HZ, the unit of /proc/PID/stat's start time: 100 on every Linux
// architecture orcr builds for.
const clockTick = 100

// stopOrphan kills what is left of lost agent a and reports whether it found a
// process to stop. The pid must still name the process the agent launched — started
// within a minute of the agent's launch, not a reused pid — and its process group is
// killed when it leads one (the pane's program and what it started).
func stopOrphan(a wire.Agent) bool {
	if a.PID <= 1 || a.StartedAt == nil {
		return false
	}
	started, pgrp, ok := procStart(a.PID)
	if !ok || started.Before(a.StartedAt.Add(-time.Minute)) || started.After(a.StartedAt.Add(time.Minute)) {
		return false
	}
	target := a.PID
	if pgrp == a.PID {
		target = -a.PID
	}
	return syscall.Kill(target, syscall.SIGKILL) == nil
}

// procStart reads when process pid started (wall time) and its process group.
func procStart(pid int) (time.Time, int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return time.Time{}, 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return time.Time{}, 0, false
	}
	// After the command name: state(0) ppid(1) pgrp(2) … starttime(19).
	f := strings.Fields(s[i+1:])
	if len(f) < 20 || f[0] == "Z" {
		return time.Time{}, 0, false
	}
	pgrp, err1 := strconv.Atoi(f[2])
	ticks, err2 := strconv.ParseInt(f[19], 10, 64)
	boot, ok := bootTime()
	if err1 != nil || err2 != nil || !ok {
		return time.Time{}, 0, false
	}
	return boot.Add(time.Duration(ticks) * time.Second / clockTick), pgrp, true
}

// bootTime is the system's boot time from /proc/stat's btime.
func bootTime() (time.Time, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "btime "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return time.Unix(n, 0), err == nil
		}
	}
	return time.Time{}, false
}
