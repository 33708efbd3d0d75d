package pty

// UsePidfd switches adopted panes' exit detection between pidfd and the /proc
// fallback for tests; it returns a function that restores the previous choice.
func UsePidfd(on bool) (restore func()) {
	old := pidfdDisabled
	pidfdDisabled = !on
	return func() { pidfdDisabled = old }
}
