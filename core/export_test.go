package core

// SetFreeMemoryFunc replaces the free-memory reader of the memory guard (tests).
func (e *Engine) SetFreeMemoryFunc(f func() int) {
	e.mu.Lock()
	e.fl.freeMB = f
	e.mu.Unlock()
	e.kickAdmission()
}
