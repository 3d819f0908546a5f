package distributed

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/store"
)

// MaxAbandonedCalls is how many calls to Redis a Store lets run on after their callers
// have given up, before it fails new calls at once with store.ErrUnavailable. See
// WithTimeout.
const MaxAbandonedCalls = 64

// errTooManyHung is the error of a call refused because MaxAbandonedCalls calls given up
// on are still waiting for Redis.
var errTooManyHung = fmt.Errorf("%w: distributed: %d calls to Redis given up on are still waiting for an answer "+
	"(the server hangs or the network drops packets)", store.ErrUnavailable, MaxAbandonedCalls)

// honoursContext reports whether client bounds its socket reads and writes by the
// context's deadline (ContextTimeoutEnabled). Without it, go-redis waits up to its
// ReadTimeout (5 s by default), per retry, for a server that hangs, whatever the context.
// An unknown client type is assumed not to.
func honoursContext(client redis.UniversalClient) bool {
	switch c := client.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return false
}

// guard makes a call to Redis return by its context's deadline even when the client
// ignores that deadline. For a client that honours it, the call runs inline at no cost.
// Otherwise the call runs on a goroutine of its own and the caller waits for it or for
// the deadline, whichever comes first; a call given up on runs on until the client's own
// timeouts end it, and at most MaxAbandonedCalls of them may do so at once.
type guard struct {
	inline    bool
	abandoned atomic.Int64 // calls given up on whose goroutine has not returned
}

// The states of a guarded call: the caller and the goroutine race to move it out of
// running, and the loser learns who won.
const (
	guardRunning int32 = iota
	guardDone
	guardLeft
)

// guarded is one call run on its own goroutine.
type guarded struct {
	state atomic.Int32
	done  chan struct{}
	reply any
	err   error
}

// do runs f(ctx) and returns its result, or ctx's error once ctx is done if f has not
// returned by then; left is true in that case, and f still runs: whatever f uses must
// stay untouched by the caller (not recycled) from then on. ctx must carry the deadline
// that bounds the call. cleanup, if not nil, runs after a left f returns, on its goroutine.
func (g *guard) do(ctx context.Context, f func(context.Context) (any, error), cleanup func()) (reply any, err error, left bool) {
	if g.inline {
		reply, err = f(ctx)
		return reply, err, false
	}
	if g.abandoned.Load() >= MaxAbandonedCalls {
		return nil, errTooManyHung, false
	}
	if err := ctx.Err(); err != nil {
		return nil, err, false
	}
	c := &guarded{done: make(chan struct{})}
	go func() {
		r, e := f(ctx)
		c.reply, c.err = r, e
		if c.state.CompareAndSwap(guardRunning, guardDone) {
			close(c.done)
			return
		}
		g.abandoned.Add(-1) // the caller left: this goroutine was counted
		if cleanup != nil {
			cleanup()
		}
	}()
	select {
	case <-c.done:
		return c.reply, c.err, false
	case <-ctx.Done():
		if c.state.CompareAndSwap(guardRunning, guardLeft) {
			g.abandoned.Add(1)
			return nil, ctx.Err(), true
		}
		<-c.done // finished meanwhile
		return c.reply, c.err, false
	}
}
