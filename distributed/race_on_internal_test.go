//go:build race

package distributed

// RaceDetector reports whether the tests run under the race detector.
const RaceDetector = true
