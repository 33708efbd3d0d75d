package core

// MemoryReport is how a host tells the server's one memory policy (daemon's memPolicy)
// what it let go, so that the policy alone decides when the process hands free memory
// back to the OS. A host only reports; it never collects or scavenges itself. Hosts
// call it from their own goroutines, so an implementation is safe for concurrent use
// and cheap, except that Ended with running 0 may take one collection's time.
type MemoryReport interface {
	// Freed reports n bytes of heap the host has just let go (garbage until the next
	// collection): a pane's screens packed, a terminal emulator's construction buffers.
	Freed(n int64)
	// Ended reports that a program the host launched has ended, before the host
	// reports that end (its PaneExited); running is how many of the host's programs
	// still run. The policy may return memory inside the call, so whoever hears of the
	// end of a burst hears of it with the burst's garbage already returned.
	Ended(running int)
}

// NoMemoryReport is the MemoryReport of a host given none: it ignores everything.
type NoMemoryReport struct{}

// Freed ignores the report.
func (NoMemoryReport) Freed(int64) {}

// Ended ignores the report.
func (NoMemoryReport) Ended(int) {}
