package distributed

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// dialWatch is a go-redis hook that remembers the last failed dial of a client, so that a
// call that ran out of time can say why, and that answers a refused connection at once.
//
// go-redis retries a failed dial (DialerRetries, 5 attempts 100 ms apart, in a goroutine
// of its pool that outlives the call) and then the command (MaxRetries, 3, with a backoff
// of up to half a second), until the call's deadline, and returns only the deadline: with
// Redis not listening, every call cost the store's whole timeout (200 ms by default) until
// the pool had counted PoolSize failed dials, and then up to 250 ms of command retries
// each, for a refusal that is certain at once.
//
// So once a dial has failed for certain (refused, unreachable, no such host: any failure
// but a timeout), the client is in outage mode until a dial or a command succeeds, and
// each command sent in that mode is sent without go-redis's command retries and returns as
// soon as a dial of the client fails for certain after it started (its own dial, or one
// of the pool's retries of an earlier one), with that dial's error instead of a deadline.
// Every call still goes to go-redis, so it finds a Redis that is back at once: no call is
// answered from memory. The healthy path costs one atomic load before the command and one
// after it; the outage mode costs a cancellable context per command.
type dialWatch struct {
	last   atomic.Pointer[dialFailure] // nil once a dial or a command succeeds
	refuse atomic.Pointer[refusal]     // done at the next dial that fails for certain
	parent *dialWatch                  // a Cluster or Ring node's: the store's, told of its failures too
}

type dialFailure struct {
	err     error
	at      time.Time
	certain bool // not a timeout: a retry within the call would fail the same way
}

// refusal is a context cancelled, with the dial's error as its cause, at the next dial
// of the client that fails for certain; then a new one replaces it.
type refusal struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

func newRefusal() *refusal {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &refusal{ctx: ctx, cancel: cancel}
}

var _ redis.Hook = (*dialWatch)(nil)

// watchDials adds w to client, or a watch of its own to each node a Cluster or Ring client
// creates from now on, each telling w of its failed dials (their dials are their nodes';
// the nodes a Ring already has are not watched).
func watchDials(client redis.UniversalClient, w *dialWatch) {
	if c, ok := client.(interface{ OnNewNode(func(*redis.Client)) }); ok {
		c.OnNewNode(func(node *redis.Client) { node.AddHook(&dialWatch{parent: w}) })
		return
	}
	client.AddHook(w)
}

func (w *dialWatch) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			w.failed(err)
		} else {
			w.succeeded()
		}
		return conn, err
	}
}

// failed records a failed dial, and ends the commands waiting for a dial when it failed
// for certain.
func (w *dialWatch) failed(err error) {
	f := &dialFailure{err: err, at: time.Now(), certain: certain(err)}
	w.last.Store(f)
	if f.certain {
		if r := w.refuse.Swap(newRefusal()); r != nil {
			r.cancel(err)
		}
	}
	if w.parent != nil {
		w.parent.last.Store(f)
	}
}

// succeeded ends the outage mode.
func (w *dialWatch) succeeded() {
	if w.last.Load() != nil {
		w.last.Store(nil)
	}
	if w.parent != nil && w.parent.last.Load() != nil {
		w.parent.last.Store(nil)
	}
}

// certain reports a dial error that a retry within the call would meet again: anything
// but a timeout (a blackholed server, a slow network) or a context's end.
func certain(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled)
}

// outage returns the failure of the outage mode, or nil.
func (w *dialWatch) outage() *dialFailure {
	if f := w.last.Load(); f != nil && f.certain {
		return f
	}
	return nil
}

func (w *dialWatch) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if w.outage() == nil {
			err := next(ctx, cmd)
			w.answered(err)
			return err
		}
		ctx, done := w.fast(ctx)
		err := next(ctx, noRetry{cmd})
		if e := done(err); e != err {
			cmd.SetErr(e)
			err = e
		}
		w.answered(err)
		return err
	}
}

func (w *dialWatch) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if w.outage() == nil {
			err := next(ctx, cmds)
			w.answered(err)
			return err
		}
		ctx, done := w.fast(ctx)
		wrapped := make([]redis.Cmder, len(cmds))
		for i, c := range cmds {
			wrapped[i] = noRetry{c}
		}
		err := next(ctx, wrapped)
		if e := done(err); e != err {
			for _, c := range cmds {
				if c.Err() == nil || c.Err() == err {
					c.SetErr(e)
				}
			}
			err = e
		}
		w.answered(err)
		return err
	}
}

// fast returns the context of a command sent in outage mode, which ends at the next dial
// of the client that fails for certain, and done, which ends it and returns the error the
// command should return: the dial's error when that dial ended it, else err.
func (w *dialWatch) fast(ctx context.Context) (context.Context, func(err error) error) {
	r := w.refuse.Load()
	if r == nil {
		w.refuse.CompareAndSwap(nil, newRefusal())
		r = w.refuse.Load()
	}
	cctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(r.ctx, func() { cancel(context.Cause(r.ctx)) })
	return cctx, func(err error) error {
		stop()
		cause := context.Cause(cctx)
		cancel(nil)
		if err != nil && ctx.Err() == nil && cause != nil && cause != context.Canceled && errors.Is(err, context.Canceled) {
			return cause
		}
		return err
	}
}

// answered ends the outage mode when Redis answered a command: with a reply, or with an
// error of its own.
func (w *dialWatch) answered(err error) {
	if w.last.Load() == nil {
		return
	}
	var re redis.Error
	if err == nil || errors.Is(err, redis.Nil) || errors.As(err, &re) {
		w.succeeded()
	}
}

// noRetry is a command that go-redis sends once: in outage mode a retry would meet the
// same failure, after a backoff the caller would pay.
type noRetry struct{ redis.Cmder }

func (noRetry) NoRetry() bool { return true }

// cause returns the error of the last dial if it failed within the last d and nothing has
// succeeded since, else nil.
func (w *dialWatch) cause(d time.Duration) error {
	f := w.last.Load()
	if f == nil || time.Since(f.at) > d {
		return nil
	}
	return f.err
}
