package teststore

import (
	"fmt"

	"github.com/ratekit/limiter/algo"
)

// Tagged is a custom wrapper that == cannot compare: it holds a slice. It decides as the
// algorithm it wraps, runs its script, and says so with Unwrap. The stores must accept it
// as they accept any algorithm (issue 35.5).
type Tagged struct {
	algo.Scripted
	Tags []string
}

// Unwrap returns the wrapped algorithm.
func (w Tagged) Unwrap() algo.Algorithm { return w.Scripted }

// NoPanic runs call with a panic turned into an error, so that a test reports it and
// goes on (to check, for example, that Close still returns).
func NoPanic(call func() (algo.Decision, error)) (d algo.Decision, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return call()
}
