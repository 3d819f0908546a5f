// Package clockx is the time source of the limiter packages.
//
// Two clocks satisfy [Clock]:
//
//   - [Real] reads the system clock and sleeps for real. It is the default everywhere.
//   - [Fake], the test clock, stands still until a test moves it with Add or Set, and its
//     Sleep advances it at once by the requested duration and returns. Use it for
//     deterministic tests and simulations: a minute of virtual traffic runs in
//     milliseconds and every wait is recorded exactly.
//
// Both are safe for concurrent use. Any type with Now and Sleep is a Clock too: a test
// that must catch a goroutine while it sleeps can pass one whose Sleep blocks until the
// context ends.
//
// The algorithms take time as integer microseconds since the Unix epoch: a store reads
// its clock's Now().UnixMicro().
package clockx
