package limiter_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
)

// TestZeroLimiter checks that a Limiter not made by New (the zero value, or nil) answers
// every method with an error wrapping algo.ErrInvalidConfig, or a nil result, and never panics.
func TestZeroLimiter(t *testing.T) {
	t.Parallel()
	var zero limiter.Limiter
	for name, l := range map[string]*limiter.Limiter{"zero value": &zero, "new(Limiter)": new(limiter.Limiter), "nil": nil} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			check := func(method string, err error) {
				t.Helper()
				if !errors.Is(err, algo.ErrInvalidConfig) {
					t.Errorf("%s: error = %v, want one wrapping algo.ErrInvalidConfig", method, err)
				}
			}
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("panic: %v", p)
					}
				}()
				d, err := l.Allow(ctx, "k")
				check("Allow", err)
				if d.Allowed {
					t.Error("Allow allowed")
				}
				_, err = l.AllowN(ctx, "k", 2)
				check("AllowN", err)
				r, err := l.Reserve(ctx, "k", 1, time.Second)
				check("Reserve", err)
				if r != nil {
					t.Error("Reserve returned a Reservation")
				}
				check("Wait", l.Wait(ctx, "k"))
				check("WaitN", l.WaitN(ctx, "k", 2))
				ok, err := l.TryAcquire(ctx, "k", 1, time.Second)
				check("TryAcquire", err)
				if ok {
					t.Error("TryAcquire acquired")
				}
				check("SetAlgorithm", l.SetAlgorithm(algo.TokenBucket{Rate: 1, Burst: 1}))
				if a := l.Algorithm(); a != nil {
					t.Errorf("Algorithm() = %v after SetAlgorithm on an unusable Limiter, want nil", a)
				}
				if rs := l.Rules(); rs != nil {
					t.Errorf("Rules() = %v, want nil", rs)
				}
				_, err = limiter.All(l)
				check("All", err)
			}()
		})
	}
}
