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

// Batching configures the client-side batching a store does by default (see
// [WithBatching]). Its zero value means the defaults: pipelines of up to 64 commands, at
// most 2 of them in flight.
type Batching struct {
	// MaxBatch is the largest number of commands one pipeline carries. 0 means 64; more
	// than 4096 means 4096; less than 0 is an error of WithBatching.
	MaxBatch int
	// MaxInFlight is the number of pipelines that may be in flight at once, which is also
	// the most flusher goroutines the store runs at once and, on a single server, the
	// number of connections batching uses. 0 means 2; more than 64 means 64; less
	// than 0 is an error of WithBatching.
	MaxInFlight int
	// Off sends every call on its own round trip, as a store did before batching became
	// the default; the other fields are then ignored.
	Off bool
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
// call. Otherwise it joins the queue, and a flusher goroutine takes everything queued (up
// to maxBatch calls) as soon as fewer than maxInFlight pipelines are in flight: calls
// arriving while the pipelines are busy go out together in the next one. The queue holds
// only blocked callers, so it is bounded by them.
//
// Flushers run only while there is work: one is started when a call is queued and no
// flusher is there to take it, and it exits when it finds the queue empty. An idle store
// (batching is the default) holds no goroutine, so a store that is never closed leaks
// nothing.
type batcher struct {
	s           *Store // sends the pipelines (transport.go)
	client      redis.UniversalClient
	guard       *guard // the store's: makes each pipeline return by its deadline
	maxBatch    int
	maxInFlight int
	pipes       sync.Pool // redis.Pipeliner, reused: Exec leaves a pipeline empty

	mu       sync.Mutex
	cond     sync.Cond // flushers wait on it for a free pipeline slot, with mu held
	queue    []*call   // oldest first
	busy     int       // pipelines in flight, the flushers' and the lone callers'
	flushers int       // flusher goroutines running
	idle     int       // flushers waiting on cond and not yet signalled
	closed   bool
	wg       sync.WaitGroup // the flushers

	onStart func() // a test hook: called first by every flusher; nil outside tests
}

// newBatcher returns the batcher of cfg; it starts no goroutine.
func newBatcher(s *Store, cfg Batching) *batcher {
	cfg = cfg.normalized()
	client := s.client
	b := &batcher{s: s, client: client, guard: &s.guard, maxBatch: cfg.MaxBatch, maxInFlight: cfg.MaxInFlight}
	b.pipes.New = func() any { return client.Pipeline() }
	b.cond.L = &b.mu
	return b
}

// alone reports whether a call may go on its own, as without batching: nothing is in
// flight and nothing queued (and the batcher is open). It then holds a pipeline slot,
// which done gives back.
func (b *batcher) alone() bool {
	b.mu.Lock()
	ok := !b.closed && b.busy == 0 && len(b.queue) == 0
	if ok {
		b.busy++
	}
	b.mu.Unlock()
	return ok
}

// done gives back the slot of a call alone returned true for, and lets the calls queued
// meanwhile go.
func (b *batcher) done() {
	b.mu.Lock()
	b.busy--
	b.wake()
	b.mu.Unlock()
}

// do queues c for the next pipeline and returns its reply, or returns when ctx ends. ctx
// carries the call's deadline (Store.bound), which bounds the wait in the queue and on
// the wire together: a caller never waits longer, even for a flusher stuck on a server
// that hangs. It returns store.ErrClosed, unwrapped (the store compares it with ==), when
// the batcher is closed. c is the batcher's from then on.
func (b *batcher) do(ctx context.Context, c *call) (any, error) {
	if err := ctx.Err(); err != nil {
		putCall(c)
		return nil, err
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		putCall(c)
		return nil, store.ErrClosed
	}
	c.deadline, _ = ctx.Deadline()
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

// wake gets the queue moving when calls are queued and another pipeline may go: it
// signals a flusher waiting for a slot, or starts one when none is waiting and fewer than
// maxInFlight run. b.mu must be held.
func (b *batcher) wake() {
	if len(b.queue) == 0 || b.busy >= b.maxInFlight {
		return
	}
	if b.idle > 0 {
		b.idle--
		b.cond.Signal()
		return
	}
	if b.flushers < b.maxInFlight {
		b.flushers++
		b.wg.Add(1)
		go b.flusher()
	}
}

// close stops accepting calls and waits until the calls queued so far have been
// answered and the flushers have exited.
func (b *batcher) close() {
	b.mu.Lock()
	b.closed = true
	b.idle = 0
	b.cond.Broadcast() // a waiting flusher that finds the queue empty exits
	if len(b.queue) > 0 && b.flushers == 0 {
		// Every slot is a lone caller's: a flusher waits for one to end (wake signals it).
		b.flushers++
		b.wg.Add(1)
		go b.flusher()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// flusher sends the queue, up to maxBatch calls per pipeline, whenever fewer than
// maxInFlight pipelines are in flight, and exits when it finds the queue empty.
func (b *batcher) flusher() {
	defer b.wg.Done()
	if b.onStart != nil {
		b.onStart()
	}
	pipe := b.pipes.Get().(redis.Pipeliner)
	var batch []*call
	b.mu.Lock()
	for {
		for len(b.queue) > 0 && b.busy >= b.maxInFlight {
			b.idle++
			b.cond.Wait()
		}
		if len(b.queue) == 0 {
			b.flushers--
			// A flusher waiting for a slot has nothing left to send either: the one that
			// took the queue while it waited does not signal it (it loops on its own).
			if b.idle > 0 {
				b.idle = 0
				b.cond.Broadcast()
			}
			b.mu.Unlock()
			b.pipes.Put(pipe)
			return
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

// flush sends a batch taken from the queue and answers every call.
//
// A call whose deadline (Store.bound) has passed fails without being sent, and one whose
// caller has left is not sent. The pipeline runs under the latest deadline of the calls it
// carries (none if one of them has none): it sets no deadline of its own, so no call is
// cut short by another's, and none outlives all of its callers.
//
// When the client ignores deadlines (see guard), the pipeline runs on a goroutine of its
// own and the flusher moves on at the deadline, leaving that goroutine to answer the
// calls (whose callers have left by then, their own deadline being no later) with a
// pipeline of its own; flush returns the pipeline the flusher uses next.
func (b *batcher) flush(pipe redis.Pipeliner, batch []*call) redis.Pipeliner {
	ctx := context.Background()
	live := batch[:0]
	var latest time.Time
	unbounded := false
	now := time.Now()
	for _, c := range batch {
		if c.state.Load() == callAbandoned {
			putCall(c)
			continue
		}
		if !c.deadline.IsZero() && !now.Before(c.deadline) {
			c.err = context.DeadlineExceeded
			answer(c)
			continue
		}
		if c.deadline.IsZero() {
			unbounded = true
		} else if c.deadline.After(latest) {
			latest = c.deadline
		}
		live = append(live, c)
	}
	if len(live) == 0 {
		return pipe
	}
	if !unbounded {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, latest)
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
