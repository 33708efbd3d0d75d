package api

import (
	"time"

	"orcr/core/wire"
)

// Method names of schedules.
const (
	MethodScheduleList = "schedule.list"
)

// Schedule is a command the server runs on a cadence.
type Schedule struct {
	Name         string            `json:"name"`
	EverySeconds int               `json:"everySeconds"` // 0 when Cron is set
	Cron         string            `json:"cron"`
	Command      []string          `json:"command"`
	Cwd          string            `json:"cwd"`
	Env          map[string]string `json:"env"`
	MissedPolicy string            `json:"missedPolicy"` // "skip" | "run-once"
	Owner        string            `json:"owner"`
	CreatedAt    time.Time         `json:"createdAt"`
	NextAt       *time.Time        `json:"nextAt"`
	LastRun      *ScheduleRun      `json:"lastRun"`
}

// ScheduleRun records one run of a schedule.
type ScheduleRun struct {
	StartedAt  time.Time  `json:"startedAt"`
	EndedAt    *time.Time `json:"endedAt"`
	ExitCode   *int       `json:"exitCode"`
	OutputTail string     `json:"outputTail"`
	Error      string     `json:"error"`
	// Trigger is what started the run: "schedule", "manual" (schedule run) or
	// "missed" (the run-once missed-run policy after a restart).
	Trigger string `json:"trigger,omitempty"`
	// DueAt is the cadence instant the run was for (absent for manual runs).
	DueAt *time.Time `json:"dueAt,omitempty"`
}

// ScheduleListResult answers schedule.list.
type ScheduleListResult struct {
	Schedules []Schedule `json:"schedules"`
}

// Method names of schedule management.
const (
	MethodScheduleAdd    = "schedule.add"
	MethodScheduleRemove = "schedule.rm"
	MethodScheduleRun    = "schedule.run"
	MethodScheduleRuns   = "schedule.runs"
)

// Events of schedules.
const (
	// EventScheduleFired and EventScheduleFinished bracket one schedule run; Data has
	// "name" and, when finished, "exitCode" and "error". EventScheduleMissed says due runs
	// were skipped by the missed-run policy.
	EventScheduleFired    = "schedule.fired"
	EventScheduleFinished = "schedule.finished"
	EventScheduleMissed   = "schedule.missed"
)

var _ = wire.DeclareEvents(EventScheduleFired, EventScheduleFinished, EventScheduleMissed)

// ScheduleAddParams creates a schedule (schedule.add). Exactly one of EverySeconds and
// Cron is set. Cwd and Env are the creating shell's; the CLI sends its own.
type ScheduleAddParams struct {
	Name         string            `json:"name"`
	EverySeconds int               `json:"everySeconds,omitempty"`
	Cron         string            `json:"cron,omitempty"`
	Command      []string          `json:"command" maxItems:"4096"`
	Cwd          string            `json:"cwd,omitempty"`
	Env          map[string]string `json:"env,omitempty" maxItems:"1024"`
	MissedPolicy string            `json:"missedPolicy,omitempty"` // skip (default) | run-once
}

// ScheduleResult wraps one schedule.
type ScheduleResult struct {
	Schedule Schedule `json:"schedule"`
}

// ScheduleNameParams names one schedule.
type ScheduleNameParams struct {
	Name string `json:"name"`
}

// ScheduleRunParams runs a schedule now (schedule.run). With Wait the call returns when
// the run ends; otherwise once it has started.
type ScheduleRunParams struct {
	Name string `json:"name"`
	Wait bool   `json:"wait,omitempty"`
}

// ScheduleRunResult answers schedule.run.
type ScheduleRunResult struct {
	Run ScheduleRun `json:"run"`
}

// ScheduleRunsResult answers schedule.runs: the stored history, oldest first.
type ScheduleRunsResult struct {
	Runs []ScheduleRun `json:"runs"`
}

// The API, one declaration per method.
var (
	ScheduleList   = wire.Declare[wire.Empty, ScheduleListResult](MethodScheduleList, "Durable schedules.", wire.ReadOnly)
	ScheduleAdd    = wire.Declare[ScheduleAddParams, ScheduleResult](MethodScheduleAdd, "Create a durable schedule.")
	ScheduleRemove = wire.Declare[ScheduleNameParams, wire.Empty](MethodScheduleRemove, "Remove a schedule and its run history.")
	ScheduleRunNow = wire.Declare[ScheduleRunParams, ScheduleRunResult](MethodScheduleRun, "Run a schedule now.")
	ScheduleRuns   = wire.Declare[ScheduleNameParams, ScheduleRunsResult](MethodScheduleRuns, "A schedule's run history, oldest first.", wire.ReadOnly)
)
