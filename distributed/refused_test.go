package distributed_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/store"
)

// closedPort returns the address of a port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// TestRefusedConnectionNamesCause points a client at a closed port: go-redis retries the
// dial until the store's deadline and returns only "context deadline exceeded", so the
// store must name the refused dial itself. Every call fails wrapping store.ErrUnavailable
// (an outage, not a key's failure) and the dial's error, with and without
// ContextTimeoutEnabled and batching, and with a caller's own deadline (the facade's
// WithTimeout) shorter than the store's.
func TestRefusedConnectionNamesCause(t *testing.T) {
	t.Parallel()
	addr := closedPort(t)
	a := algo.TokenBucket{Rate: 1, Burst: 1}
	for _, cte := range []bool{false, true} {
		for _, batched := range []bool{false, true} {
			t.Run(fmt.Sprintf("ContextTimeoutEnabled=%v/batching=%v", cte, batched), func(t *testing.T) {
				t.Parallel()
				c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: cte})
				t.Cleanup(func() { _ = c.Close() })
				opts := []distributed.Option{distributed.WithTimeout(300 * time.Millisecond)}
				if batched {
					opts = append(opts, distributed.WithBatching(distributed.Batching{}))
				}
				s, err := distributed.New(c, opts...)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
				for i := 0; i < 3; i++ {
					_, err := s.Apply(context.Background(), "k", a, algo.Request{N: 1})
					checkRefused(t, err, true)
				}
				// With a caller's deadline shorter than the store's: the refusal is
				// answered at once (see TestRefusedConnectionAnsweredAtOnce), before the
				// caller's deadline, so it is an outage still.
				ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
				defer cancel()
				_, err = s.Apply(ctx, "k", a, algo.Request{N: 1})
				checkRefused(t, err, true)
			})
		}
	}
}

func checkRefused(t *testing.T, err error, unavailable bool) {
	t.Helper()
	if got := errors.Is(err, store.ErrUnavailable); got != unavailable {
		t.Errorf("error %v: wraps store.ErrUnavailable %v, want %v", err, got, unavailable)
	}
	if errors.Is(err, store.ErrKeyUnavailable) {
		t.Errorf("error %v wraps store.ErrKeyUnavailable: a refused connection is an outage", err)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(fmt.Sprint(err), "connection refused") {
		t.Errorf("error %q does not name the refused connection", err)
	}
}

// isRefusal reports an error that names a refused connection.
func isRefusal(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED)
}
