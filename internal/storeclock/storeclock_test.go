package storeclock_test

import (
	"testing"
	"time"

	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/storeclock"
)

type clocked struct{ c clockx.Clock }

func (s clocked) Clock() clockx.Clock { return s.c }

func TestOf(t *testing.T) {
	t.Parallel()
	fake := clockx.NewFake(time.Unix(0, 0))
	if got := storeclock.Of(clocked{fake}); got != clockx.Clock(fake) {
		t.Errorf("Of(store with a fake clock) = %v, want the fake", got)
	}
	if got, want := storeclock.Of(clocked{nil}), clockx.Real(); got != want {
		t.Errorf("Of(store reporting nil) = %v, want clockx.Real()", got)
	}
	if got, want := storeclock.Of(struct{}{}), clockx.Real(); got != want {
		t.Errorf("Of(store without Clock) = %v, want clockx.Real()", got)
	}
	if got, want := storeclock.Of(nil), clockx.Real(); got != want {
		t.Errorf("Of(nil) = %v, want clockx.Real()", got)
	}
}
