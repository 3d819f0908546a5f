package limiter_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/store"
)

// TestReexportedErrors checks that the root's store errors are the store's values, so
// errors.Is matches either way.
func TestReexportedErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		root, pkg error
	}{
		{"ErrUnavailable", limiter.ErrUnavailable, store.ErrUnavailable},
		{"ErrClosed", limiter.ErrClosed, store.ErrClosed},
		{"ErrInvalidKey", limiter.ErrInvalidKey, store.ErrInvalidKey},
		{"ErrInvalidConfig", limiter.ErrInvalidConfig, algo.ErrInvalidConfig},
		{"ErrInvalidRequest", limiter.ErrInvalidRequest, algo.ErrInvalidRequest},
	} {
		if c.root != c.pkg {
			t.Errorf("limiter.%s is not the same value as its package's", c.name)
		}
	}
	l, _ := newTest(t, algo.TokenBucket{Rate: 1, Burst: 1})
	if _, err := l.Allow(context.Background(), ""); !errors.Is(err, limiter.ErrInvalidKey) {
		t.Errorf("Allow with an empty key: %v, want one wrapping limiter.ErrInvalidKey", err)
	}
}

// TestWouldExceedDeadlineIsDeadlineExceeded checks that the error of a wait that cannot end
// before the context's deadline matches both ErrWouldExceedDeadline and
// context.DeadlineExceeded (golang/go#54541), plain and composite.
func TestWouldExceedDeadlineIsDeadlineExceeded(t *testing.T) {
	t.Parallel()
	l, _ := newTest(t, algo.TokenBucket{Rate: 1.0 / 3600, Burst: 1}) // one permit an hour
	allowN(t, l, "k", 1)
	all := mustAll(t, l)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for name, lim := range map[string]*limiter.Limiter{"plain": l, "composite": all} {
		err := lim.Wait(ctx, "k")
		if !errors.Is(err, limiter.ErrWouldExceedDeadline) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s Wait an hour before a deadline in a minute: %v, want one matching ErrWouldExceedDeadline and context.DeadlineExceeded", name, err)
		}
		var te interface{ Timeout() bool }
		if !errors.As(err, &te) || !te.Timeout() {
			t.Errorf("%s: %v has no Timeout() true", name, err)
		}
	}
	if errors.Is(context.DeadlineExceeded, limiter.ErrWouldExceedDeadline) {
		t.Error("context.DeadlineExceeded matches ErrWouldExceedDeadline: the match must go one way only")
	}
}
