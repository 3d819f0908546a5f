package distributed

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// maxAbandonedCalls is how many calls to Redis a Store lets run on after their callers
// have given up. It bounds the calls a Store runs on goroutines of its own (see
// WithTimeout) at once, so that however many callers give up on a hung server, no more
// than this many goroutines outlive them: a call beyond it waits for one of them to end,
// until its deadline, and when all of them have been given up on it fails at once with
// store.ErrUnavailable.
const maxAbandonedCalls = 64

// errTooManyHung is the error of a call refused because maxAbandonedCalls calls given up
// on are still waiting for Redis. (The store wraps it with store.ErrUnavailable.)
var errTooManyHung = fmt.Errorf("distributed: %d calls to Redis given up on are still waiting for an answer "+
	"(the server hangs or the network drops packets)", maxAbandonedCalls)

// errNoSlot is the error of a call whose deadline passed while it waited for one of the
// maxAbandonedCalls calls in flight to end.
var errNoSlot = fmt.Errorf("distributed: %d calls to Redis in flight, none ended in time "+
	"(the server is slow or hangs): %w", maxAbandonedCalls, context.DeadlineExceeded)

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
// ignores that deadline. It sets no deadline: the call's one deadline is Store.bound's
// (deadline.go). For a client that honours it, the call runs inline at no cost.
// Otherwise the call runs on a goroutine of its own and the caller waits for it or for
// the deadline, whichever comes first; a call given up on runs on until the client's own
// timeouts end it.
//
// Any call in flight may be given up on, so the bound on the goroutines that outlive their
// callers is a bound on the goroutines in flight: each takes one of maxAbandonedCalls
// slots before it starts and gives it back as its last act. Counting only the calls
// already given up on would let any number start while none has timed out yet, and all
// of them be given up on together a moment later.
type guard struct {
	inline    bool
	slots     chan struct{} // one element per goroutine of do in flight; maxAbandonedCalls long
	abandoned atomic.Int64  // calls given up on whose goroutine has not returned
}

// init sets g up for client's calls (see honoursContext).
func (g *guard) init(client redis.UniversalClient) {
	g.inline = honoursContext(client)
	if !g.inline {
		g.slots = make(chan struct{}, maxAbandonedCalls)
	}
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
//
// When maxAbandonedCalls goroutines are in flight, do waits for one of them to end, until
// ctx is done (errNoSlot); when all of them have been given up on it fails at once
// (errTooManyHung): they end only by the client's own timeouts, seconds away.
func (g *guard) do(ctx context.Context, f func(context.Context) (any, error), cleanup func()) (reply any, err error, left bool) {
	if g.inline {
		reply, err = f(ctx)
		return reply, err, false
	}
	if err := ctx.Err(); err != nil {
		return nil, err, false
	}
	if err := g.acquire(ctx); err != nil {
		return nil, err, false
	}
	c := &guarded{done: make(chan struct{})}
	go func() {
		defer func() { <-g.slots }() // the last act: this goroutine no longer counts
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

// acquire takes a slot for a goroutine of do: at once when one is free (the healthy
// case), else once one is given back, until ctx is done.
func (g *guard) acquire(ctx context.Context) error {
	select {
	case g.slots <- struct{}{}:
		return nil
	default:
	}
	if g.abandoned.Load() >= maxAbandonedCalls {
		return errTooManyHung
	}
	select {
	case g.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		if ctx.Err() == context.DeadlineExceeded {
			return errNoSlot
		}
		return ctx.Err()
	}
}
