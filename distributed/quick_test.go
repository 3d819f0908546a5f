package distributed_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
)

// sentScripts records each script command the client sends, as its name, the function or
// script it names (quick, full, sha, src) and its argument count, in order.
type sentScripts struct {
	def *algo.Script
	mu  sync.Mutex
	got []string
}

// eachCmd is a client hook that hands every command sent, alone or in a pipeline, to the
// function before sending it.
type eachCmd func(redis.Cmder)

func (f eachCmd) DialHook(next redis.DialHook) redis.DialHook { return next }
func (f eachCmd) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		f(cmd)
		return next(ctx, cmd)
	}
}
func (f eachCmd) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			f(c)
		}
		return next(ctx, cmds)
	}
}

func (h *sentScripts) note(cmd redis.Cmder) {
	args := cmd.Args()
	name := cmd.Name()
	if len(args) < 2 {
		return
	}
	fn, quick, _ := distributed.FunctionNames(h.def)
	var what string
	switch args[1] {
	case quick:
		what = "quick"
	case fn:
		what = "full"
	case h.def.Source:
		what = "src"
	default:
		switch name {
		case "evalsha":
			what = "sha"
		case "fcall", "eval":
			what = "other"
		default:
			return // FUNCTION LOAD and the connection's set-up
		}
	}
	h.mu.Lock()
	h.got = append(h.got, fmt.Sprintf("%s %s %d", name, what, len(args)))
	h.mu.Unlock()
}

func (h *sentScripts) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	got := h.got
	h.got = nil
	return got
}

// TestQuickFunctionSent: an Apply of N = 1 with MaxWait 0 at the server's TIME goes to the
// script's quick function, with the config alone (FCALL, name, numkeys, the key, rate and
// burst: 6 arguments), also after FUNCTION FLUSH; every other call to the full function
// (10 arguments); a client clock never goes quick; and on a server without functions the
// quick call goes out as EVALSHA (then EVAL) with the full arguments. The decisions agree
// throughout.
func TestQuickFunctionSent(t *testing.T) {
	t.Parallel()
	a := algo.TokenBucket{Rate: 0.001, Burst: 5}
	def := a.Script()
	run := func(t *testing.T, c *redis.Client, opts ...distributed.Option) *sentScripts {
		t.Helper()
		h := &sentScripts{def: def}
		c.AddHook(eachCmd(h.note))
		s := newStore(t, c, append([]distributed.Option{distributed.WithBatching(distributed.Batching{Off: true})}, opts...)...)
		ctx := ctxTimeout(t, 30*time.Second)
		apply := func(req algo.Request, wantAllowed bool, wantRemaining int64) {
			t.Helper()
			d, err := s.Apply(ctx, "k", a, req)
			if err != nil || d.Allowed != wantAllowed || d.Remaining != wantRemaining {
				t.Fatalf("Apply(%+v) = %+v, %v; want allowed %v, remaining %d", req, d, err, wantAllowed, wantRemaining)
			}
		}
		apply(algo.Request{N: 1}, true, 4)
		apply(algo.Request{N: 2}, true, 2)
		apply(algo.Request{N: 1, MaxWait: time.Millisecond}, true, 1)
		apply(algo.Request{N: 1}, true, 0)
		apply(algo.Request{N: 1}, false, 0)
		return h
	}

	t.Run("functions", func(t *testing.T) {
		t.Parallel()
		c := redistest.Start(t).Client(t)
		h := run(t, c)
		want := []string{"fcall quick 6", "fcall quick 6", // refused, then after FUNCTION LOAD
			"fcall full 10", "fcall full 10", "fcall quick 6", "fcall quick 6"}
		if got := h.take(); !reflect.DeepEqual(got, want) {
			t.Errorf("sent %q, want %q", got, want)
		}
	})
	t.Run("client clock", func(t *testing.T) {
		t.Parallel()
		c := redistest.Start(t).Client(t)
		h := run(t, c, distributed.WithClientClock(fakeClock()))
		want := []string{"fcall full 10", "fcall full 10", "fcall full 10", "fcall full 10", "fcall full 10", "fcall full 10"}
		if got := h.take(); !reflect.DeepEqual(got, want) {
			t.Errorf("sent %q, want %q", got, want)
		}
	})
	t.Run("no functions", func(t *testing.T) {
		t.Parallel()
		c := redistest.StartWithFlags(t, "--rename-command", "FCALL", "").Client(t)
		h := run(t, c)
		want := []string{"fcall quick 6", "evalsha sha 10", "eval src 10", // unknown FCALL, then NOSCRIPT
			"evalsha sha 10", "evalsha sha 10", "evalsha sha 10", "evalsha sha 10"}
		if got := h.take(); !reflect.DeepEqual(got, want) {
			t.Errorf("sent %q, want %q", got, want)
		}
	})
}
