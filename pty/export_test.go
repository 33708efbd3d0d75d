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
	var packed bool
	locked(h, id, func(p *pane) { packed = p.packed != nil })
	return packed
}

// HeldScreens reports which of pane id's screens (main, alternate) hold their cells
// (pack.go): neither while it is packed, one while the other is hidden.
func HeldScreens(h *Host, id string) [2]bool {
	var held [2]bool
	locked(h, id, func(p *pane) {
		if bufs, ok := screenBuffers(p.emu); ok {
			for i, b := range bufs {
				held[i] = b.Lines != nil
			}
		}
	})
	return held
}

// Pack packs pane id's screens now, as its quiet timer would.
func Pack(h *Host, id string) bool {
	var packed bool
	locked(h, id, func(p *pane) { packed = p.packed != nil || p.repack() })
	return packed
}

// locked runs fn on pane id under its lock; nothing when there is no such pane.
func locked(h *Host, id string, fn func(p *pane)) {
	p, err := h.pane(id)
	if err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fn(p)
}
