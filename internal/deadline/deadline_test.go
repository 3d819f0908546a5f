package deadline_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ratekit/limiter/internal/deadline"
)

func TestNew(t *testing.T) {
	a, b := deadline.New("x: a"), deadline.New("x: a")
	wrapped := fmt.Errorf("key k: %w", a)
	if !errors.Is(wrapped, a) || !errors.Is(wrapped, context.DeadlineExceeded) {
		t.Errorf("%v: want it to match itself and context.DeadlineExceeded", wrapped)
	}
	if errors.Is(wrapped, b) || errors.Is(wrapped, context.Canceled) {
		t.Errorf("%v matches another sentinel or context.Canceled", wrapped)
	}
	var to interface{ Timeout() bool }
	if !errors.As(wrapped, &to) || !to.Timeout() {
		t.Errorf("%v: want Timeout() true", wrapped)
	}
	if a.Error() != "x: a" {
		t.Errorf("Error() = %q", a.Error())
	}
}
