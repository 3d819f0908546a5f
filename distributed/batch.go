package distributed

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/store"
)

// Defaults and bounds of Batching.
const (
	// defaultMaxBatch is the number of commands a pipeline carries at most when
	// Batching.MaxBatch is 0.
	defaultMaxBatch = 64
	// defaultMaxInFlight is the number of pipelines in flight at once when
	// Batching.MaxInFlight is 0.
	defaultMaxInFlight = 2
	// maxBatchLimit is the largest Batching.MaxBatch: larger values are clamped to it.
	maxBatchLimit = 4096
	// maxInFlightLimit is the largest Batching.MaxInFlight: larger values are clamped to it.
	maxInFlightLimit = 64
)

// Batching configures the client-side batching that [WithBatching] turns on. Its zero value
// means the defaults: pipelines of up to 64 commands, at most 2 of them in flight.
type Batching struct {
	// MaxBatch is the largest number of commands one pipeline carries. 0 means 64; more
	// than 4096 means 4096; less than 0 is an error of WithBatching.
	MaxBatch int
	// MaxInFlight is the number of pipelines that may be in flight at once, which is also
	// the number of flusher goroutines the store runs and, on a single server, the number
	// of connections batching uses. 0 means 2; more than 64 means 64; less
	// than 0 is an error of WithBatching.
	MaxInFlight int
}

// normalized returns b with the defaults filled in and the bounds applied.
func (b Batching) normalized() Batching {
	switch {
	case b.MaxBatch <= 0:
		b.MaxBatch = defaultMaxBatch
	case b.MaxBatch > maxBatchLimit:
		b.MaxBatch = maxBatchLimit
	}
	switch {
	case b.MaxInFlight <= 0:
		b.MaxInFlight = defaultMaxInFlight
	case b.MaxInFlight > maxInFlightLimit:
		b.MaxInFlight = maxInFlightLimit
	}
	return b
}

// batcher coalesces the scripts of concurrent calls into pipelines ("smart batching",
// no timer). A call that finds nothing in flight and nothing queued is sent at once from
// its own goroutine, as a pipeline of one command under its own context, like a plain
// call. Otherwise it joins the queue, and one of maxInFlight flusher goroutines takes
// everything queued (up to maxBatch calls) as soon as fewer than maxInFlight pipelines
// are in flight: calls arriving while the pipelines are busy go out together in the next
// one. The queue holds only blocked callers, so it is bounded by them.
type batcher struct {
	s           *Store // sends the pipelines (transport.go)
	client      redis.UniversalClient
	timeout     time.Duration
	guard       *guard // the store's: bounds each pipeline by its deadline
	maxBatch    int
	maxInFlight int
	pipes       sync.Pool // redis.Pipeliner for the calls sent from their own goroutine

	mu     sync.Mutex
	cond   sync.Cond // flushers wait on it for work, with mu held
	queue  []*call   // oldest first
	busy   int       // pipelines in flight, the flushers' and the lone callers'
	idle   int       // flushers waiting on cond and not yet signalled
	closed bool
	wg     sync.WaitGroup // the flushers
}

// newBatcher starts the flushers of cfg.
func newBatcher(s *Store, cfg Batching) *batcher {
	cfg = cfg.normalized()
	client := s.client
	b := &batcher{s: s, client: client, timeout: s.timeout, guard: &s.guard, maxBatch: cfg.MaxBatch, maxInFlight: cfg.MaxInFlight}
	b.pipes.New = func() any { return client.Pipeline() }
	b.cond.L = &b.mu
	b.wg.Add(cfg.MaxInFlight)
	for i := 0; i < cfg.MaxInFlight; i++ {
		go b.flusher()
	}
	return b
}

// do sends c and returns its reply, at once when the store is idle and in the next
// pipeline otherwise, or returns when ctx ends. It returns store.ErrClosed, unwrapped (the
// store compares it with ==), when the batcher is closed. c is the batcher's from then on.
func (b *batcher) do(ctx context.Context, c *call) (any, error) {
	if err := ctx.Err(); err != nil {
		putCall(c)
		return nil, err
	}
	var start time.Time
	if b.timeout > 0 {
		// One deadline for the whole call, sent alone or queued: a caller never waits
		// longer than the timeout, even for a flusher stuck on a server that hangs.
		start = time.Now()
		var cancel context.CancelFunc
		if ctx, cancel = b.s.bounds.bound(ctx, start); cancel != nil {
			defer cancel()
		}
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		putCall(c)
		return nil, store.ErrClosed
	}
	if b.busy == 0 && len(b.queue) == 0 {
		// Idle: no one to share a round trip with, so no hand-off to a flusher either.
		b.busy++
		b.mu.Unlock()
		left := b.sendAlone(ctx, c)
		b.mu.Lock()
		b.busy--
		b.wake()
		b.mu.Unlock()
		if left {
			return nil, ctx.Err() // c belongs to the call still running
		}
		reply, err := c.reply, c.err
		putCall(c)
		return reply, err
	}
	c.start = start
	b.queue = append(b.queue, c)
	b.wake()
	b.mu.Unlock()

	select {
	case <-c.ready:
	case <-ctx.Done():
		if c.state.CompareAndSwap(callWaiting, callAbandoned) {
			return nil, ctx.Err() // the flusher puts c back once it is done with it
		}
		<-c.ready // answered meanwhile: the signal is on its way
	}
	reply, err := c.reply, c.err
	putCall(c)
	return reply, err
}

// wake signals an idle flusher when calls are queued and another pipeline may go.
// b.mu must be held.
func (b *batcher) wake() {
	if len(b.queue) > 0 && b.busy < b.maxInFlight && b.idle > 0 {
		b.idle--
		b.cond.Signal()
	}
}

// close stops accepting calls and waits until the flushers have answered every call
// queued so far and exited.
func (b *batcher) close() {
	b.mu.Lock()
	b.closed = true
	b.idle = 0
	b.cond.Broadcast()
	b.mu.Unlock()
	b.wg.Wait()
}

// flusher sends the queue, up to maxBatch calls per pipeline, whenever fewer than
// maxInFlight pipelines are in flight, until the batcher is closed and the queue empty.
func (b *batcher) flusher() {
	defer b.wg.Done()
	pipe := b.client.Pipeline() // reusable: Exec leaves it empty
	var batch []*call
	b.mu.Lock()
	for {
		for len(b.queue) == 0 || b.busy >= b.maxInFlight {
			if b.closed && len(b.queue) == 0 {
				b.mu.Unlock()
				return
			}
			b.idle++
			b.cond.Wait()
		}
		b.busy++
		n := min(len(b.queue), b.maxBatch)
		batch = append(batch[:0], b.queue[:n]...)
		rest := copy(b.queue, b.queue[n:])
		clear(b.queue[rest:])
		b.queue = b.queue[:rest]
		b.mu.Unlock()

		pipe = b.flush(pipe, batch)
		clear(batch)
		b.mu.Lock()
		b.busy--
	}
}

// sendAlone sends c on its own under the caller's context, which carries the store's
// timeout, as a plain call does. left reports that ctx ended first while the client
// ignores deadlines (see guard): the call runs on and owns c, which it puts back in the
// pool once done.
func (b *batcher) sendAlone(ctx context.Context, c *call) (left bool) {
	pipe := b.pipes.Get().(redis.Pipeliner)
	if b.guard.inline {
		one := [1]*call{c}
		b.s.sendBatch(ctx, pipe, one[:])
		b.pipes.Put(pipe)
		return false
	}
	_, err, left := b.guard.do(ctx, func(ctx context.Context) (any, error) {
		b.s.sendBatch(ctx, pipe, []*call{c})
		return nil, nil
	}, func() { b.pipes.Put(pipe); putCall(c) })
	if left {
		return true
	}
	b.pipes.Put(pipe)
	if err != nil {
		c.err = err // not sent: too many calls given up on, or ctx already done
	}
	return false
}

// flush sends a batch taken from the queue and answers every call.
//
// The pipeline's deadline is the store's timeout counted from when its oldest call was
// queued, so the timeout bounds a call's wait in the queue and on the wire together, as it
// bounds a plain call's wait for a connection and its round trip; a call that has already
// waited that long fails without being sent. A call whose caller has left is not sent.
//
// When the client ignores deadlines (see guard), the pipeline runs on a goroutine of its
// own and the flusher moves on at the deadline, leaving that goroutine to answer the
// calls (whose callers have left by then, their own deadline being no later) with a
// pipeline of its own; flush returns the pipeline the flusher uses next.
func (b *batcher) flush(pipe redis.Pipeliner, batch []*call) redis.Pipeliner {
	ctx := context.Background()
	live := batch[:0]
	var oldest time.Time
	for _, c := range batch {
		if c.state.Load() == callAbandoned {
			putCall(c)
			continue
		}
		if b.timeout > 0 && time.Since(c.start) >= b.timeout {
			c.err = context.DeadlineExceeded
			answer(c)
			continue
		}
		if len(live) == 0 {
			oldest = c.start
		}
		live = append(live, c)
	}
	if len(live) == 0 {
		return pipe
	}
	if b.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, oldest.Add(b.timeout))
		defer cancel()
	}
	if b.guard.inline {
		b.s.sendBatch(ctx, pipe, live)
		answerAll(live, nil)
		return pipe
	}
	own := slices.Clone(live) // batch's array is the flusher's, reused at once
	_, err, left := b.guard.do(ctx, func(ctx context.Context) (any, error) {
		b.s.sendBatch(ctx, pipe, own)
		answerAll(own, nil)
		return nil, nil
	}, nil)
	switch {
	case left:
		return b.client.Pipeline()
	case err != nil: // not sent
		answerAll(own, err)
	}
	return pipe
}

// answerAll answers every call, with err when it is not nil.
func answerAll(calls []*call, err error) {
	for _, c := range calls {
		if err != nil {
			c.err = err
		}
		answer(c)
	}
}

// answer hands c's reply to its caller, or puts c back in the pool if the caller has left.
func answer(c *call) {
	if c.state.CompareAndSwap(callWaiting, callAnswered) {
		c.ready <- struct{}{}
		return
	}
	putCall(c)
}
