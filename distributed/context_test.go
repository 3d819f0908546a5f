package distributed_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/store"
)

// stall is a go-redis hook that stops every script call until its context ends and then
// fails it with the context's error, as a read cut short by a deadline or a cancel does.
// entered receives one value per stalled command, so the test knows the call is in flight.
type stall struct{ entered chan struct{} }

func (s stall) DialHook(next redis.DialHook) redis.DialHook { return next }

func (s stall) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n := cmd.Name(); n != "fcall" && n != "evalsha" && n != "eval" {
			return next(ctx, cmd)
		}
		s.entered <- struct{}{}
		<-ctx.Done()
		cmd.SetErr(ctx.Err())
		return ctx.Err()
	}
}

func (s stall) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestContextEndsInFlight covers a call whose caller gives up while it waits for Redis:
// the error is the caller's (context.Canceled), not a store failure; while the store's own
// timeout, with the caller still waiting, is a store failure (store.ErrUnavailable).
func TestContextEndsInFlight(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	st := stall{entered: make(chan struct{}, 4)}
	c.AddHook(st)
	a := counter{Limit: 5}

	t.Run("CallerCancels", func(t *testing.T) {
		s := newStore(t, c, distributed.WithTimeout(time.Minute))
		for _, op := range []string{"Apply", "Refund", "ApplyAll"} {
			ctx, cancel := context.WithCancel(context.Background())
			errs := make(chan error, 1)
			go func() {
				var err error
				switch op {
				case "Apply":
					_, err = s.Apply(ctx, "k", a, algo.Request{N: 1})
				case "Refund":
					err = s.Refund(ctx, "k", a, 1, 0)
				default:
					_, _, err = s.ApplyAll(ctx, "k", []algo.Algorithm{a, algo.TokenBucket{Rate: 1, Burst: 1}}, algo.Request{N: 1})
				}
				errs <- err
			}()
			<-st.entered // the command is in flight
			cancel()
			err := <-errs
			if !errors.Is(err, context.Canceled) || errors.Is(err, store.ErrUnavailable) {
				t.Errorf("%s cancelled in flight: %v, want an error wrapping context.Canceled and not store.ErrUnavailable", op, err)
			}
		}
	})
	t.Run("StoreTimeout", func(t *testing.T) {
		s := newStore(t, c, distributed.WithTimeout(20*time.Millisecond))
		errs := make(chan error, 1)
		go func() {
			_, err := s.Apply(context.Background(), "k", a, algo.Request{N: 1})
			errs <- err
		}()
		<-st.entered
		err := <-errs
		if !errors.Is(err, store.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Apply past the store's timeout: %v, want an error wrapping store.ErrUnavailable and context.DeadlineExceeded", err)
		}
	})
}
