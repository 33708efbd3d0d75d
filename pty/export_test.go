package pty

// UsePidfd switches adopted panes' exit detection between pidfd and the /proc
// fallback for tests; it returns a function that restores the previous choice.
func UsePidfd(on bool) (restore func()) {
	old := pidfdDisabled
	pidfdDisabled = !on
	return func() { pidfdDisabled = old }
}

// Packed reports whether pane id has its screens packed (pack.go).
func Packed(h *Host, id string) bool {
	p, err := h.pane(id)
	if err != nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.packed != nil
}
