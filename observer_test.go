package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/store"
)

// eventLog is one ordered record of what several observers were told and what the caller
// got, as lines that a test compares whole.
type eventLog struct {
	mu    sync.Mutex
	lines []string
}

func (g *eventLog) add(format string, args ...any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lines = append(g.lines, fmt.Sprintf(format, args...))
}

// recorder is an Observer writing to an eventLog under its name.
type recorder struct {
	name string
	log  *eventLog
}

func (r recorder) Decided(_ context.Context, e limiter.Event) {
	var flags []string
	for _, f := range []struct {
		on   bool
		name string
	}{{e.Shadow, "shadow"}, {e.Composite, "composite"}, {e.Latency > 0, "timed"}, {e.Err != nil, "err"},
		{errors.Is(e.Err, limiter.ErrCircuitOpen), "circuit-open"}} {
		if f.on {
			flags = append(flags, f.name)
		}
	}
	r.log.add("%s: %s %s n=%d allowed=%v r=%d %s", r.name, e.Key, e.Outcome, e.N, e.Decision.Allowed,
		e.Decision.Remaining, strings.Join(flags, ","))
}

func (r recorder) BreakerChanged(from, to limiter.BreakerState) {
	r.log.add("%s: breaker %s -> %s", r.name, from, to)
}

// called logs what the caller of Allow got.
func (g *eventLog) called(d limiter.Decision, err error) {
	g.add("caller: allowed=%v r=%d err=%v", d.Allowed, d.Remaining, err != nil)
}

// TestObserver runs scripts of calls on observed limiters and compares, line by line, what
// the observers were told (outcome, figures, shadow, composite, whether the store call was
// timed, errors) and what the callers got, on each store.
func TestObserver(t *testing.T) {
	t.Parallel()
	type env struct {
		ctx context.Context
		st  store.Store // a fresh store on clk
		new func() store.Store
		clk *clockx.Fake
		log *eventLog
	}
	obs := func(e env, name string) limiter.Option { return limiter.WithObserver(recorder{name, e.log}) }
	down := func(e env) *flakyStore {
		f := &flakyStore{Store: e.st}
		f.down.Store(true)
		return f
	}
	cases := []struct {
		name string
		run  func(t *testing.T, e env)
		want []string
	}{{
		name: "single",
		run: func(t *testing.T, e env) {
			l := mustNew(t, e.st, algo.TokenBucket{Rate: 1, Burst: 2}, limiter.WithClock(e.clk), obs(e, "o"))
			for range 3 {
				e.log.called(l.Allow(e.ctx, "k"))
			}
			_, err := l.Allow(e.ctx, "") // an input error: no decision, but told
			e.log.add("caller: invalid key %v", errors.Is(err, store.ErrInvalidKey))
		},
		want: []string{
			"o: k allowed n=1 allowed=true r=1 timed", "caller: allowed=true r=1 err=false",
			"o: k allowed n=1 allowed=true r=0 timed", "caller: allowed=true r=0 err=false",
			"o: k denied n=1 allowed=false r=0 timed", "caller: allowed=false r=0 err=false",
			"o:  error n=1 allowed=false r=0 timed,err", "caller: invalid key true",
		},
	}, {
		name: "fail-closed",
		run: func(t *testing.T, e env) {
			l := mustNew(t, down(e), algo.TokenBucket{Rate: 1, Burst: 2}, limiter.WithClock(e.clk), obs(e, "o"))
			e.log.called(l.Allow(e.ctx, "k"))
			ok, err := l.TryAcquire(e.ctx, "k", 2, time.Second)
			e.log.add("caller: try %v %v", ok, errors.Is(err, store.ErrUnavailable))
		},
		want: []string{
			"o: k fail_closed n=1 allowed=false r=0 timed,err", "caller: allowed=false r=0 err=true",
			"o: k fail_closed n=2 allowed=false r=0 timed,err", "caller: try false true",
		},
	}, {
		name: "fail-open",
		run: func(t *testing.T, e env) {
			l := mustNew(t, down(e), algo.TokenBucket{Rate: 1, Burst: 2}, limiter.WithClock(e.clk), obs(e, "o"),
				limiter.WithFailurePolicy(limiter.FailOpen))
			e.log.called(l.Allow(e.ctx, "k"))
			e.log.add("caller: wait %v", l.Wait(e.ctx, "k"))
		},
		want: []string{
			"o: k fail_open n=1 allowed=true r=0 timed,err", "caller: allowed=true r=0 err=true",
			"o: k fail_open n=1 allowed=true r=0 timed,err", "caller: wait <nil>",
		},
	}, {
		name: "fallback",
		run: func(t *testing.T, e env) {
			fb := mustNew(t, newLocal(t, e.clk), algo.FixedWindow{Limit: 1, Window: time.Minute}, limiter.WithClock(e.clk), obs(e, "fb"))
			l := mustNew(t, down(e), algo.TokenBucket{Rate: 1, Burst: 2}, limiter.WithClock(e.clk), obs(e, "o"),
				limiter.WithFailurePolicy(limiter.Fallback(fb)))
			e.log.called(l.Allow(e.ctx, "k"))
			e.log.called(l.Allow(e.ctx, "k"))
		},
		want: []string{
			// The fallback is a limiter of its own: its observer is told first.
			"fb: k allowed n=1 allowed=true r=0 timed", "o: k fallback n=1 allowed=true r=0 timed,err",
			"caller: allowed=true r=0 err=true",
			"fb: k denied n=1 allowed=false r=0 timed", "o: k fallback n=1 allowed=false r=0 timed,err",
			"caller: allowed=false r=0 err=true",
		},
	}, {
		name: "breaker",
		run: func(t *testing.T, e env) {
			st := down(e)
			l := mustNew(t, st, algo.TokenBucket{Rate: 1, Burst: 2}, limiter.WithClock(e.clk), obs(e, "o"),
				limiter.WithFailurePolicy(limiter.FailOpen),
				limiter.WithCircuitBreaker(limiter.CircuitBreaker{MinCalls: 2, Window: time.Nanosecond, CoolDown: 10 * time.Second}))
			e.log.called(l.Allow(e.ctx, "k"))
			e.log.called(l.Allow(e.ctx, "k"))
			e.clk.Add(time.Nanosecond)
			e.log.called(l.Allow(e.ctx, "k")) // opens at the window's end, skipped: no store call, not timed
			e.clk.Add(10 * time.Second)
			e.log.called(l.Allow(e.ctx, "k")) // the probe fails
			e.clk.Add(10 * time.Second)
			st.down.Store(false)
			e.log.called(l.Allow(e.ctx, "k")) // the probe succeeds
		},
		want: []string{
			"o: k fail_open n=1 allowed=true r=0 timed,err", "caller: allowed=true r=0 err=true",
			"o: k fail_open n=1 allowed=true r=0 timed,err", "caller: allowed=true r=0 err=true",
			"o: breaker closed -> open",
			"o: k fail_open n=1 allowed=true r=0 err,circuit-open", "caller: allowed=true r=0 err=true",
			"o: breaker open -> half_open", "o: breaker half_open -> open",
			"o: k fail_open n=1 allowed=true r=0 timed,err", "caller: allowed=true r=0 err=true",
			"o: breaker open -> half_open", "o: breaker half_open -> closed",
			"o: k allowed n=1 allowed=true r=1 timed", "caller: allowed=true r=1 err=false",
		},
	}, {
		name: "composite",
		run: func(t *testing.T, e env) {
			user := mustNew(t, e.st, algo.FixedWindow{Limit: 3, Window: time.Minute}, limiter.WithClock(e.clk), obs(e, "user"),
				limiter.WithKeyFunc(func(k string) string { return "u:" + k }))
			global := mustNew(t, e.new(), algo.TokenBucket{Rate: 1, Burst: 1}, limiter.WithClock(e.clk), obs(e, "global"))
			all := mustAll(t, user, global)
			e.log.called(all.Allow(e.ctx, "k"))
			e.log.called(all.Allow(e.ctx, "k")) // global denies: user's grant is given back
			e.log.called(user.Allow(e.ctx, "k"))
		},
		want: []string{
			"user: u:k allowed n=1 allowed=true r=2 composite,timed", "global: k allowed n=1 allowed=true r=0 composite,timed",
			"caller: allowed=true r=0 err=false",
			"user: u:k allowed n=1 allowed=true r=1 composite,timed", "global: k denied n=1 allowed=false r=0 composite,timed",
			"caller: allowed=false r=0 err=false",
			// The refund gave the second grant back: the rule alone sees one permit taken.
			"user: u:k allowed n=1 allowed=true r=1 timed", "caller: allowed=true r=1 err=false",
		},
	}, {
		name: "composite-atomic",
		run: func(t *testing.T, e env) {
			a := mustNew(t, e.st, algo.FixedWindow{Limit: 3, Window: time.Minute}, limiter.WithClock(e.clk), obs(e, "a"))
			b := mustNew(t, e.st, algo.TokenBucket{Rate: 1, Burst: 1}, limiter.WithClock(e.clk), obs(e, "b"))
			all := mustAll(t, a, b)
			e.log.called(all.Allow(e.ctx, "k"))
			e.log.called(all.Allow(e.ctx, "k")) // b denies: nothing is taken from a
		},
		want: []string{
			"a: k allowed n=1 allowed=true r=2 composite,timed", "b: k allowed n=1 allowed=true r=0 composite,timed",
			"caller: allowed=true r=0 err=false",
			"a: k allowed n=1 allowed=true r=1 composite,timed", "b: k denied n=1 allowed=false r=0 composite,timed",
			"caller: allowed=false r=0 err=false",
		},
	}, {
		name: "composite-fail-closed",
		run: func(t *testing.T, e env) {
			a := mustNew(t, e.st, algo.FixedWindow{Limit: 3, Window: time.Minute}, limiter.WithClock(e.clk), obs(e, "a"))
			b := mustNew(t, down(e), algo.TokenBucket{Rate: 1, Burst: 1}, limiter.WithClock(e.clk), obs(e, "b"))
			e.log.called(mustAll(t, a, b).Allow(e.ctx, "k"))
		},
		want: []string{
			// One store, but b's is wrapped (not a MultiApplier): rule by rule.
			"a: k allowed n=1 allowed=true r=2 composite,timed", "b: k fail_closed n=1 allowed=false r=0 composite,timed,err",
			"caller: allowed=false r=0 err=true",
		},
	}, {
		name: "shadow",
		run: func(t *testing.T, e env) {
			l := mustNew(t, e.st, algo.TokenBucket{Rate: 1, Burst: 2}, limiter.WithClock(e.clk), obs(e, "o"), limiter.WithShadow())
			for range 3 {
				e.log.called(l.Allow(e.ctx, "k"))
			}
			r, err := l.Reserve(e.ctx, "k", 1, time.Hour)
			e.log.add("caller: reserve ok=%v delay=%v err=%v", r.OK(), r.Delay(), err)
			ok, err := l.TryAcquire(e.ctx, "k", 1, time.Hour)
			e.log.add("caller: try %v %v", ok, err)
			e.log.add("caller: wait %v", l.WaitN(e.ctx, "k", 5)) // more than Burst: never granted
			// The denials took nothing: one second refills one token.
			e.clk.Add(time.Second)
			enforced := mustNew(t, e.st, algo.TokenBucket{Rate: 1, Burst: 2}, limiter.WithClock(e.clk))
			d, err := enforced.Peek(e.ctx, "k")
			e.log.add("peek: allowed=%v r=%d err=%v", d.Allowed, d.Remaining, err)
		},
		want: []string{
			"o: k allowed n=1 allowed=true r=1 shadow,timed", "caller: allowed=true r=1 err=false",
			"o: k allowed n=1 allowed=true r=0 shadow,timed", "caller: allowed=true r=0 err=false",
			"o: k denied n=1 allowed=false r=0 shadow,timed", "caller: allowed=true r=0 err=false",
			"o: k denied n=1 allowed=false r=0 shadow,timed", "caller: reserve ok=true delay=0s err=<nil>",
			"o: k denied n=1 allowed=false r=0 shadow,timed", "caller: try true <nil>",
			"o: k denied n=5 allowed=false r=0 shadow,timed", "caller: wait <nil>",
			"peek: allowed=true r=1 err=<nil>",
		},
	}, {
		name: "shadow-fail-closed",
		run: func(t *testing.T, e env) {
			l := mustNew(t, down(e), algo.TokenBucket{Rate: 1, Burst: 2}, limiter.WithClock(e.clk), obs(e, "o"), limiter.WithShadow())
			e.log.called(l.Allow(e.ctx, "k"))
			e.log.add("caller: wait %v", l.Wait(e.ctx, "k"))
			r, err := l.Reserve(e.ctx, "k", 1, 0)
			e.log.add("caller: reserve ok=%v %v", r.OK(), errors.Is(err, store.ErrUnavailable))
		},
		want: []string{
			"o: k fail_closed n=1 allowed=false r=0 shadow,timed,err", "caller: allowed=true r=0 err=true",
			"o: k fail_closed n=1 allowed=false r=0 shadow,timed,err", "caller: wait <nil>",
			"o: k fail_closed n=1 allowed=false r=0 shadow,timed,err", "caller: reserve ok=true true",
		},
	}, {
		name: "shadow-composite",
		run: func(t *testing.T, e env) {
			enforced := mustNew(t, e.st, algo.FixedWindow{Limit: 3, Window: time.Minute}, limiter.WithClock(e.clk), obs(e, "enforced"))
			trial := mustNew(t, e.st, algo.TokenBucket{Rate: 1, Burst: 1}, limiter.WithClock(e.clk), obs(e, "trial"), limiter.WithShadow())
			all := mustAll(t, enforced, trial)
			for range 4 {
				e.log.called(all.Allow(e.ctx, "k"))
			}
		},
		want: []string{
			"enforced: k allowed n=1 allowed=true r=2 composite,timed", "trial: k allowed n=1 allowed=true r=0 shadow,composite,timed",
			"caller: allowed=true r=0 err=false",
			// The trial rule denies in truth: the enforced rule still takes its permit.
			"enforced: k allowed n=1 allowed=true r=1 composite,timed", "trial: k denied n=1 allowed=false r=0 shadow,composite,timed",
			"caller: allowed=true r=0 err=false",
			"enforced: k allowed n=1 allowed=true r=0 composite,timed", "trial: k denied n=1 allowed=false r=0 shadow,composite,timed",
			"caller: allowed=true r=0 err=false",
			"enforced: k denied n=1 allowed=false r=0 composite,timed", "caller: allowed=false r=0 err=false",
		},
	}}
	for sname, mk := range fakeClockStores(t, "observe") {
		for _, c := range cases {
			t.Run(sname+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				clk := clockx.NewFake(start)
				e := env{ctx: context.Background(), st: mk(clk), new: func() store.Store { return mk(clk) }, clk: clk, log: &eventLog{}}
				c.run(t, e)
				got, want := strings.Join(e.log.lines, "\n"), strings.Join(c.want, "\n")
				if got != want {
					t.Errorf("got:\n%s\nwant:\n%s", got, want)
				}
			})
		}
	}
}

// latencies is an Observer keeping each Event's Outcome and Latency.
type latencies struct {
	mu     sync.Mutex
	events []limiter.Event
}

func (o *latencies) Decided(_ context.Context, e limiter.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, e)
}

func (o *latencies) BreakerChanged(_, _ limiter.BreakerState) {}

// TestObserverLatencyZeroWithoutStoreCall: while the breaker is open no call reaches the
// store, so every Event has Latency 0, also when the skipped call is answered by an input
// error or the caller's done context rather than ErrCircuitOpen.
func TestObserverLatencyZeroWithoutStoreCall(t *testing.T) {
	t.Parallel()
	obs := &latencies{}
	l, st, _, clk := newFlaky(t, probeFast, limiter.WithObserver(obs))
	st.down.Store(true)
	_, _ = l.Allow(context.Background(), "k") // starts a window of 1 s
	clk.Add(1500 * time.Millisecond)          // the window ends: open until 2 s after the failure
	done, cancel := context.WithCancel(context.Background())
	cancel()
	before := st.applies.Load()
	obs.events = nil
	_, err1 := l.Allow(context.Background(), "k")
	_, err2 := l.Allow(context.Background(), "")
	_, err3 := l.Allow(done, "k")
	if !errors.Is(err1, limiter.ErrCircuitOpen) || !errors.Is(err2, store.ErrInvalidKey) || !errors.Is(err3, context.Canceled) {
		t.Fatalf("errors = %v, %v, %v; want ErrCircuitOpen, ErrInvalidKey, context.Canceled", err1, err2, err3)
	}
	if st.applies.Load() != before {
		t.Fatalf("the store was called while the breaker was open")
	}
	if len(obs.events) != 3 {
		t.Fatalf("observer told %d events, want 3", len(obs.events))
	}
	for i, e := range obs.events {
		if e.Latency != 0 {
			t.Errorf("event %d (%s, %v): Latency = %v; want 0, no call was made", i+1, e.Outcome, e.Err, e.Latency)
		}
	}
}
