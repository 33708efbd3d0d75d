//go:build race

package store

// raceEnabled: the race detector multiplies memory use, so RSS checks skip under it.
const raceEnabled = true
