// Package clockx is the time source of the limiter packages.
//
// Three clocks satisfy [Clock]:
//
//   - [Real] reads the system clock and sleeps for real. It is the default everywhere.
//   - [Mock] (built on github.com/benbjohnson/clock) stands still until a test moves it with
//     Add or Set; a Sleep blocks until the clock has been moved past its deadline. Use it in
//     concurrency tests that must observe a goroutine while it sleeps.
//   - [Fake] also stands still, but its Sleep advances the clock at once by the requested
//     duration and returns. Use it for deterministic tests and simulations: a minute of
//     virtual traffic runs in milliseconds and every wait is recorded exactly.
//
// All clocks are safe for concurrent use.
package clockx
