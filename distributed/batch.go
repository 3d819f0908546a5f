package distributed

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/store"
)

// Defaults and bounds of Batching.
const (
	// DefaultMaxBatch is the number of commands a pipeline carries at most when
	// Batching.MaxBatch is 0.
	DefaultMaxBatch = 64
	// DefaultMaxInFlight is the number of pipelines in flight at once when
	// Batching.MaxInFlight is 0.
	DefaultMaxInFlight = 2
	// MaxBatchLimit is the largest Batching.MaxBatch: larger values are clamped to it.
	MaxBatchLimit = 4096
	// MaxInFlightLimit is the largest Batching.MaxInFlight: larger values are clamped to it.
	MaxInFlightLimit = 64
)

// Batching configures the client-side batching that [WithBatching] turns on. Its zero value
// means the defaults: pipelines of up to 64 commands, at most 2 of them in flight.
type Batching struct {
	// MaxBatch is the largest number of commands one pipeline carries. 0 means
	// DefaultMaxBatch (64); more than MaxBatchLimit (4096) means MaxBatchLimit; less than 0
	// is an error of WithBatching.
	MaxBatch int
	// MaxInFlight is the number of pipelines that may be in flight at once, which is also
	// the number of flusher goroutines the store runs and, on a single server, the number
	// of connections batching uses. 0 means DefaultMaxInFlight (2); more than
	// MaxInFlightLimit (64) means MaxInFlightLimit; less than 0 is an error of WithBatching.
	MaxInFlight int
}

// normalized returns b with the defaults filled in and the bounds applied.
func (b Batching) normalized() Batching {
	switch {
	case b.MaxBatch <= 0:
		b.MaxBatch = DefaultMaxBatch
	case b.MaxBatch > MaxBatchLimit:
		b.MaxBatch = MaxBatchLimit
	}
	switch {
	case b.MaxInFlight <= 0:
		b.MaxInFlight = DefaultMaxInFlight
	case b.MaxInFlight > MaxInFlightLimit:
		b.MaxInFlight = MaxInFlightLimit
	}
	return b
}

// The states of a call. A call is owned by its caller until it is queued; from then on
// exactly one of two parties puts it back in the pool: the caller, once it has read its
// answer (the flusher moved it waiting → answered and signalled ready), or the flusher,
// when the caller gave up first (the caller moved it waiting → abandoned and left).
const (
	callWaiting int32 = iota
	callAnswered
	callAbandoned
)

// call is one Apply or Refund waiting for its pipeline. Calls are pooled: a decision
// allocates none of this.
type call struct {
	args  []any // the whole command: EVALSHA, sha, numkeys, keys..., ARGV...
	e     *scriptEntry
	start time.Time // when it was queued; zero without a timeout
	cmd   *redis.Cmd

	reply any
	err   error
	state atomic.Int32
	ready chan struct{} // capacity 1: the flusher's one signal that reply and err are set
}

var callPool = sync.Pool{New: func() any {
	return &call{args: make([]any, 0, 16), ready: make(chan struct{}, 1)}
}}

func putCall(c *call) {
	clear(c.args)
	c.args = c.args[:0]
	c.e, c.start, c.cmd, c.reply, c.err = nil, time.Time{}, nil, nil, nil
	c.state.Store(callWaiting)
	callPool.Put(c)
}

// batcher coalesces the scripts of concurrent calls into pipelines ("smart batching",
// no timer). A call that finds nothing in flight and nothing queued is sent at once from
// its own goroutine, as a pipeline of one command under its own context, like a plain
// call. Otherwise it joins the queue, and one of maxInFlight flusher goroutines takes
// everything queued (up to maxBatch calls) as soon as fewer than maxInFlight pipelines
// are in flight: calls arriving while the pipelines are busy go out together in the next
// one. The queue holds only blocked callers, so it is bounded by them.
type batcher struct {
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
func newBatcher(client redis.UniversalClient, timeout time.Duration, cfg Batching, g *guard) *batcher {
	cfg = cfg.normalized()
	b := &batcher{client: client, timeout: timeout, guard: g, maxBatch: cfg.MaxBatch, maxInFlight: cfg.MaxInFlight}
	b.pipes.New = func() any { return client.Pipeline() }
	b.cond.L = &b.mu
	b.wg.Add(cfg.MaxInFlight)
	for i := 0; i < cfg.MaxInFlight; i++ {
		go b.flusher()
	}
	return b
}

// do runs e's script with keys and args and returns its reply, sending it at once when
// the store is idle and in the next pipeline otherwise, or returns when ctx ends. It
// returns store.ErrClosed, unwrapped (the store compares it with ==), when the batcher is
// closed.
func (b *batcher) do(ctx context.Context, e *scriptEntry, keys []string, args []any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if b.timeout > 0 {
		// One deadline for the whole call, sent alone or queued: a caller never waits
		// longer than the timeout, even for a flusher stuck on a server that hangs.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.timeout)
		defer cancel()
	}
	c := callPool.Get().(*call)
	c.e = e
	c.args = append(c.args, "evalsha", e.sha, len(keys))
	for _, k := range keys {
		c.args = append(c.args, k)
	}
	c.args = append(c.args, args...)

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
	if b.timeout > 0 {
		c.start = time.Now()
	}
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
		send(ctx, pipe, one[:])
		b.pipes.Put(pipe)
		return false
	}
	_, err, left := b.guard.do(ctx, func(ctx context.Context) (any, error) {
		send(ctx, pipe, []*call{c})
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
		send(ctx, pipe, live)
		answerAll(live, nil)
		return pipe
	}
	own := slices.Clone(live) // batch's array is the flusher's, reused at once
	_, err, left := b.guard.do(ctx, func(ctx context.Context) (any, error) {
		send(ctx, pipe, own)
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

// send runs the calls' commands as one pipeline, re-sends those that met a server
// without their script, and leaves each call's reply and error in it.
func send(ctx context.Context, pipe redis.Pipeliner, calls []*call) {
	for _, c := range calls {
		queue(ctx, pipe, c)
	}
	_, _ = pipe.Exec(ctx) // the outcome of each command is read from it below
	reload(ctx, pipe, calls)
	for _, c := range calls {
		c.reply, c.err = c.cmd.Result()
		if c.err == nil && c.reply == nil {
			c.err = errNoReply // not seen: a pipeline always sets a reply or an error
		}
		c.cmd = nil
	}
}

// queue adds c's command, as c.args stand, to pipe and keeps it in c.cmd.
func queue(ctx context.Context, pipe redis.Pipeliner, c *call) {
	c.cmd = redis.NewCmd(ctx, c.args...)
	c.cmd.SetFirstKeyPos(3) // KEYS start at the fourth argument, as Cluster routing needs
	_ = pipe.Process(ctx, c.cmd)
}

// errNoReply is the error of a command that a pipeline left without reply nor error.
var errNoReply = errors.New("distributed: pipeline returned no reply for the command")

// reload re-sends the commands of calls that met a server without their script (it
// restarted, failed over, ran SCRIPT FLUSH, or is a Cluster node that never saw it):
// NOSCRIPT means the script did not run, so running it again cannot apply it twice.
//
// First round: the first such command of each script goes as EVAL, which runs and caches
// the script, followed by the others as EVALSHA. On one server, commands of one pipeline
// run in order, so they find the script cached; on a Cluster, those routed to another
// node than the EVAL meet NOSCRIPT again and go in a second round, all as EVAL. Sending
// EVAL only where needed keeps a cold start from shipping the source once per command.
func reload(ctx context.Context, pipe redis.Pipeliner, live []*call) {
	var again []*call
	for round := 0; round < 2; round++ {
		again = again[:0]
		for _, c := range live {
			if isNoScript(c.cmd.Err()) {
				again = append(again, c)
			}
		}
		if len(again) == 0 {
			return
		}
		var loaded []*scriptEntry // the scripts sent as EVAL in this round
		for _, c := range again {
			eval := round > 0 || !slices.Contains(loaded, c.e)
			if eval {
				if round == 0 {
					loaded = append(loaded, c.e)
				}
				c.args[0], c.args[1] = "eval", c.e.def.Source
			} else {
				c.args[0], c.args[1] = "evalsha", c.e.sha
			}
			queue(ctx, pipe, c)
		}
		_, _ = pipe.Exec(ctx)
	}
}

// isNoScript reports a NOSCRIPT reply, raw or as go-redis's ErrNoScript.
func isNoScript(err error) bool {
	return err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT"))
}

// answer hands c's reply to its caller, or puts c back in the pool if the caller has left.
func answer(c *call) {
	if c.state.CompareAndSwap(callWaiting, callAnswered) {
		c.ready <- struct{}{}
		return
	}
	putCall(c)
}
