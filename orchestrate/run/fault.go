package run

import (
	"os"
	"syscall"
)

// FaultEnv names a fault point at which the server kills itself with SIGKILL. Tests
// set it on a real `orcr serve` to crash it at one exact moment of a run — between
// two store writes, or between a stored intent and its effect — which a kill from
// outside cannot be timed to hit. Nothing else sets it; unset, a fault point costs a
// lookup of the environment.
const FaultEnv = "ORCR_RUN_FAULT"

// Fault points.
const (
	// FaultReviewed: the reviewer's verdict arrived and is not applied yet.
	FaultReviewed = "reviewed"
	// FaultBranch: the run's record is stored and feature/NAME is not created yet.
	FaultBranch = "branch"
)

// faultPoint kills the process when FaultEnv names point.
func faultPoint(point string) {
	if os.Getenv(FaultEnv) == point {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way: nothing after the point runs
	}
}
