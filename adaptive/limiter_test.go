package adaptive

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
)

// recorder is an Algorithm that keeps a fixed limit and records its samples.
type recorder struct {
	limit   int
	samples *[]sample
}

func (r recorder) validate() error         { return nil }
func (r recorder) newEstimator() estimator { return r }
func (r recorder) Limit() int              { return r.limit }
func (r recorder) Update(s sample) int {
	*r.samples = append(*r.samples, s)
	return r.limit
}

func TestAcquireDone(t *testing.T) {
	t.Parallel()
	clk := clockx.NewFake(t0)
	var samples []sample
	l, err := New(recorder{limit: 2, samples: &samples}, WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, ok, err := l.TryAcquire(ctx)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	clk.Add(10 * time.Millisecond)
	b, ok, err := l.TryAcquire(ctx)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if tok, why, err := l.acquire(ctx); tok != nil || why != limitReached || err != nil {
		t.Fatalf("third TryAcquire with limit 2: %v, %v, %v; want a shed (limit reached) and no error", tok, why, err)
	}
	if got := l.InFlight(); got != 2 {
		t.Fatalf("InFlight() = %d, want 2", got)
	}
	clk.Add(30 * time.Millisecond)
	a.Done(Timeout)
	a.Done(Success) // a second Done does nothing
	b.Done(Ignore)  // not a sample
	var none *Token
	none.Done(Success)
	if got := l.InFlight(); got != 0 {
		t.Fatalf("InFlight() after Done = %d, want 0", got)
	}
	want := []sample{{Start: t0, Latency: 40 * time.Millisecond, InFlight: 1, Dropped: true}}
	if len(samples) != 1 || samples[0] != want[0] {
		t.Fatalf("samples %+v, want %+v", samples, want)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if tok, ok, err := l.TryAcquire(cctx); tok != nil || ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("TryAcquire with a cancelled context: %v, %v, %v", tok, ok, err)
	}
	if _, err := New(nil); !errors.Is(err, algo.ErrInvalidConfig) {
		t.Fatalf("New(nil) = %v", err)
	}
	if _, err := New(Fixed{Limit: 1}, WithLoadShedding(func() float64 { return 1 }, 0)); !errors.Is(err, algo.ErrInvalidConfig) {
		t.Fatalf("threshold 0: %v", err)
	}
}

func TestLatencyNeverNegative(t *testing.T) {
	t.Parallel()
	clk := clockx.NewFake(t0)
	var samples []sample
	l, _ := New(recorder{limit: 1, samples: &samples}, WithClock(clk))
	tok, _, _ := l.TryAcquire(context.Background())
	clk.Add(-time.Second)
	tok.Done(Success)
	if samples[0].Latency != 0 {
		t.Fatalf("a clock that went back gave latency %v", samples[0].Latency)
	}
}

// Property: never more in flight than the limit, with goroutines racing on TryAcquire and
// Done while the limit moves. Run it with -race.
func TestNeverMoreInFlightThanLimit(t *testing.T) {
	t.Parallel()
	for _, a := range []Algorithm{Fixed{Limit: 7}, AIMD{Initial: 10, Max: 40}, Gradient{Initial: 10, Max: 40}} {
		clk := clockx.NewFake(t0)
		l, err := New(a, WithClock(clk))
		if err != nil {
			t.Fatal(err)
		}
		var violations atomic.Int64
		var admitted atomic.Int64
		l.onAdmit = func(inFlight, limit int) { // under the limiter's lock
			if inFlight > limit {
				violations.Add(1)
			}
		}
		var held atomic.Int64 // counted outside the lock, for the fixed limit
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(g), 1))
				var mine []*Token
				for range 3000 {
					if tok, ok, _ := l.TryAcquire(context.Background()); ok {
						admitted.Add(1)
						if n := held.Add(1); a == (Fixed{Limit: 7}) && n > 7 {
							violations.Add(1)
						}
						mine = append(mine, tok)
					}
					clk.Add(time.Duration(rng.IntN(3)) * time.Millisecond)
					if len(mine) > 0 && rng.IntN(2) == 0 {
						i := rng.IntN(len(mine))
						held.Add(-1)
						mine[i].Done(Outcome(rng.IntN(4)))
						mine = append(mine[:i], mine[i+1:]...)
					}
				}
				for _, tok := range mine {
					held.Add(-1)
					tok.Done(Success)
				}
			}()
		}
		wg.Wait()
		if n := violations.Load(); n > 0 {
			t.Errorf("%v: %d admissions beyond the limit", a, n)
		}
		if admitted.Load() == 0 {
			t.Errorf("%v: nothing admitted", a)
		}
		if got := l.InFlight(); got != 0 {
			t.Errorf("%v: %d in flight after every Done", a, got)
		}
	}
}

func TestLoadShedding(t *testing.T) {
	t.Parallel()
	clk := clockx.NewFake(t0)
	var load atomic.Value
	load.Store(0.0)
	l, err := New(Fixed{Limit: 100}, WithClock(clk), WithLoadShedding(func() float64 { return load.Load().(float64) }, 0.8))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// One second of requests, four at a time, 20 ms each: 200/s × 20 ms = capacity 4.
	for range 50 {
		var toks []*Token
		for range 4 {
			tok, ok, err := l.TryAcquire(ctx)
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			toks = append(toks, tok)
		}
		clk.Add(20 * time.Millisecond)
		for _, tok := range toks {
			tok.Done(Success)
		}
	}
	if got := l.capacity.estimate(clk.Now()); got != 4 {
		t.Fatalf("estimated capacity %d, want 4 (200/s × 20 ms)", got)
	}
	acquire := func() shed {
		tok, why, err := l.acquire(ctx)
		if err != nil || (tok == nil) != (why != admitted) {
			t.Fatalf("acquire = %v, %v, %v", tok, why, err)
		}
		return why
	}
	load.Store(0.9)
	for i := range 4 {
		if why := acquire(); why != admitted {
			t.Fatalf("high load, %d in flight of a capacity of 4: shed (%d)", i, why)
		}
	}
	if why := acquire(); why != overloaded {
		t.Fatalf("high load, 4 in flight: %d, want shed as overloaded", why)
	}
	load.Store(0.5)
	if why := acquire(); why != admitted {
		t.Fatalf("low load: shed (%d)", why)
	}
}

func TestCapacityWindow(t *testing.T) {
	t.Parallel()
	var w capacityWindow
	if got := w.estimate(t0); got != math.MaxInt {
		t.Fatalf("empty window: %d", got)
	}
	w.record(t0.Add(100*time.Millisecond), 50*time.Millisecond)
	if got := w.estimate(t0.Add(900 * time.Millisecond)); got != math.MaxInt {
		t.Fatalf("only the current second: %d, want none yet", got)
	}
	for range 99 {
		w.record(t0.Add(200*time.Millisecond), 80*time.Millisecond)
	}
	// 100 in second 0, the lowest latency 50 ms: 5.
	if got := w.estimate(t0.Add(1500 * time.Millisecond)); got != 5 {
		t.Fatalf("estimate %d, want 5", got)
	}
	// Ten seconds later the second has left the window.
	if got := w.estimate(t0.Add(10500 * time.Millisecond)); got != math.MaxInt {
		t.Fatalf("after the window: %d", got)
	}
}

func TestOutcomeString(t *testing.T) {
	t.Parallel()
	for o, want := range map[Outcome]string{Success: "success", Timeout: "timeout", Overload: "overload", Ignore: "ignore", 9: "Outcome(9)"} {
		if got := o.String(); got != want {
			t.Errorf("%d: %q, want %q", int(o), got, want)
		}
	}
}
