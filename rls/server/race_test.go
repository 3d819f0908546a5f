//go:build race

package server

// raceEnabled: the race detector adds allocations (and sync.Pool drops some of what it is
// given), so the allocation counts are not checked under it.
const raceEnabled = true
