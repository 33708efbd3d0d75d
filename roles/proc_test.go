package roles_test

import (
	"errors"

	"orcr/testutil/proc"
)

// processAlive is nil when pid runs (a zombie, exited and not yet reaped, has ended).
func processAlive(pid int) error {
	if proc.Gone(pid) {
		return errors.New("no such process")
	}
	return nil
}
