package workflow

import (
	"os"
	"syscall"
)

// FaultEnv names a fault point at which the server kills itself with SIGKILL, for
// tests that must crash it at one exact moment — between an agent's start and the
// fact that records it — which a kill from outside cannot be timed to hit. Nothing
// else sets it.
const FaultEnv = "ORCR_WORKFLOW_FAULT"

// Fault points.
const (
	// FaultSpawned: an item's agent is started and its start is not logged yet.
	FaultSpawned = "spawned"
	// FaultStarted: the start is logged and the spawn not yet recorded as done.
	FaultStarted = "started"
)

func faultPoint(point string) {
	if os.Getenv(FaultEnv) == point {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
}
