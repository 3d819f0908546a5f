// Package clockx is the time source of the limiter packages.
//
// Three clocks satisfy [Clock]:
//
//   - [Real] reads the system clock and sleeps for real. It is the default everywhere.
//   - [Fake], the test clock, stands still until a test moves it with Add or Set, and its
//     Sleep advances it at once by the requested duration and returns. Use it for
//     deterministic tests and simulations: a minute of virtual traffic runs in
//     milliseconds and every wait is recorded exactly.
//   - [From] adapts a github.com/benbjohnson/clock Clock. Given a *clock.Mock, its Sleep
//     blocks until the test moves the mock past the wake-up time (mock.Add or mock.Set):
//     the clock for a test that already drives its code with a mock, or that must see a
//     goroutine while it sleeps (a Wait that has not returned yet).
//
// All three are safe for concurrent use. Any type with Now and Sleep is a Clock too.
//
// The algorithms take time as integer microseconds since the Unix epoch: a store reads
// its clock's Now().UnixMicro().
package clockx
