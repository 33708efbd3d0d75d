package roles_test

import "syscall"

// processAlive is nil when pid runs (signal 0 reaches it).
func processAlive(pid int) error { return syscall.Kill(pid, 0) }
