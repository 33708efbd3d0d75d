package run

// GitProcs is how many git processes the package started so far.
func GitProcs() int64 { return gitProcs.Load() }
