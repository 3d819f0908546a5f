package algo_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

// The waits of both smooth algorithms are checked against Guava's own RateLimiter, to the
// microsecond, by package smooth's golden tests (testdata/*.golden, made by Guava 31.1).
// These tables check the other Decision fields, derived by hand from the documented
// semantics.

// never1 asks for more permits than a smooth algorithm ever grants.
const never1 = 1<<53 + 1

const linger = 60 * time.Second // how long a key is kept once it would be forgotten

type smoothStep struct {
	now     int64
	n       int64
	maxWait time.Duration
	want    algo.Decision // At defaults to now+Wait when Allowed
}

func runSmooth(t *testing.T, a algo.Algorithm, steps []smoothStep) {
	t.Helper()
	st := a.NewState()
	for i, s := range steps {
		want := s.want
		if want.Allowed && want.At == 0 {
			want.At = s.now + int64(want.Wait/time.Microsecond)
		}
		if got := a.Apply(st, s.now, algo.Request{N: s.n, MaxWait: s.maxWait}); got != want {
			t.Fatalf("%v step %d: Apply(now=%d, N=%d, MaxWait=%v)\n got %+v\nwant %+v", a, i, s.now, s.n, s.maxWait, got, want)
		}
	}
}

func TestSmoothBurstyDecisions(t *testing.T) {
	t.Parallel()
	// 5/s: interval 200 ms, maxPermits 5, refill from empty 1 s.
	a := algo.SmoothBursty{Rate: 5}
	t0 := today
	ms := time.Millisecond
	runSmooth(t, a, []smoothStep{
		// A new key is empty; the first request is free and makes the next one wait.
		{t0, 1, 0, algo.Decision{Allowed: true, Limit: 5, ResetAfter: 1200*ms + linger}},
		{t0, 1, 0, algo.Decision{Limit: 5, RetryAfter: 200 * ms, ResetAfter: 1200*ms + linger}},
		{t0, 1, 199999 * time.Microsecond, algo.Decision{Limit: 5, RetryAfter: time.Microsecond, ResetAfter: 1200*ms + linger}},
		// tryAcquire(1, 200ms) reserves: the wait is the one before it.
		{t0, 1, 200 * ms, algo.Decision{Allowed: true, Limit: 5, Wait: 200 * ms, ResetAfter: 1400*ms + linger}},
		// Idle 2 s after the last reservation: 10 permits' worth, capped at 5.
		{t0 + 2400*msec, 2, 0, algo.Decision{Allowed: true, Limit: 5, Remaining: 3, ResetAfter: 400*ms + linger}},
		// 3 stored + 1 fresh: free now, the next caller waits 200 ms.
		{t0 + 2400*msec, 4, 0, algo.Decision{Allowed: true, Limit: 5, ResetAfter: 1200*ms + linger}},
		// Time going backwards never creates permits: the wait only grows.
		{t0 + 2300*msec, 1, 0, algo.Decision{Limit: 5, RetryAfter: 300 * ms, ResetAfter: 1300*ms + linger}},
		// More than 2^53 permits: never.
		{t0 + 2600*msec, never1, algo.Forever, algo.Decision{Limit: 5, RetryAfter: algo.Never, ResetAfter: 1000*ms + linger}},
		{t0 + 2600*msec, 1, algo.Forever, algo.Decision{Allowed: true, Limit: 5, ResetAfter: 1200*ms + linger}},
		// acquire(100): granted at once (Forever), the next caller pays 100 × 200 ms.
		{t0 + 2800*msec, 100, algo.Forever, algo.Decision{Allowed: true, Limit: 5, ResetAfter: 21000*ms + linger}},
		{t0 + 2800*msec, 1, 19 * time.Second, algo.Decision{Limit: 5, RetryAfter: time.Second, ResetAfter: 21000*ms + linger}},
		{t0 + 2800*msec, 1, algo.Forever, algo.Decision{Allowed: true, Limit: 5, Wait: 20 * time.Second, ResetAfter: 21200*ms + linger}},
	})
}

func TestSmoothWarmingUpDecisions(t *testing.T) {
	t.Parallel()
	// 2/s, warm-up 4 s, cold factor 3: interval 500 ms, cold interval 1.5 s,
	// thresholdPermits 4, maxPermits 8, slope 250 ms per permit, coolDown 500 ms.
	a := algo.SmoothWarmingUp{Rate: 2, Warmup: 4 * time.Second}
	t0 := today
	ms := time.Millisecond
	runSmooth(t, a, []smoothStep{
		// A new key is cold (8 stored); the first permit costs the trapezoid from 8 to 7:
		// (1.5 s + 1.25 s) / 2 = 1.375 s, paid by the next caller. Back to cold after
		// that plus one coolDown (500 ms).
		{t0, 1, 0, algo.Decision{Allowed: true, Limit: 8, ResetAfter: 1875 * ms}},
		{t0, 1, 1374999 * time.Microsecond, algo.Decision{Limit: 8, RetryAfter: time.Microsecond, ResetAfter: 1875 * ms}},
		// Cold again exactly then: a fresh state (Remaining 8, ResetAfter 0).
		{t0 + 1875*msec, never1, 0, algo.Decision{Limit: 8, Remaining: 8, RetryAfter: algo.Never}},
		// Taking all 8: the trapezoid 8→4 (4 × (1.5 s + 0.5 s) / 2 = 4 s) plus 4 × 500 ms,
		// then 8 coolDowns (4 s) to be cold again.
		{t0 + 1875*msec, 8, 0, algo.Decision{Allowed: true, Limit: 8, ResetAfter: 10 * time.Second}},
		{t0 + 7875*msec - 1, 1, 0, algo.Decision{Limit: 8, RetryAfter: time.Microsecond, ResetAfter: 4*time.Second + time.Microsecond}},
		// Hot now: one interval per permit.
		{t0 + 7875*msec, 1, 0, algo.Decision{Allowed: true, Limit: 8, ResetAfter: 4500 * ms}},
		{t0 + 8375*msec, 1, 0, algo.Decision{Allowed: true, Limit: 8, ResetAfter: 4500 * ms}},
	})
}

func TestSmoothLimitAndRemaining(t *testing.T) {
	t.Parallel()
	const maxExact = 1 << 53
	cases := []struct {
		a               algo.Algorithm
		limit, idleLeft int64 // Limit, and Remaining of a never-request after a long idleness
	}{
		{algo.SmoothBursty{Rate: 2.5}, 3, 2},                                             // maxPermits 2.5
		{algo.SmoothBursty{Rate: 10, MaxBurstSeconds: 0.05}, 1, 0},                       // maxPermits 0.5
		{algo.SmoothBursty{Rate: 4, MaxBurstSeconds: 2.5}, 10, 10},                       // maxPermits 10
		{algo.SmoothWarmingUp{Rate: 1, Warmup: 0}, 1, 0},                                 // maxPermits 0: no warm-up
		{algo.SmoothWarmingUp{Rate: 5, Warmup: 4 * time.Second, ColdFactor: 10}, 14, 13}, // 13.64
		{algo.SmoothBursty{Rate: math.Inf(1)}, maxExact, maxExact},
		{algo.SmoothWarmingUp{Rate: math.Inf(1), Warmup: time.Second}, maxExact, maxExact},
		{algo.SmoothBursty{Rate: 1e15, MaxBurstSeconds: 1e9}, maxExact, maxExact},
	}
	for _, c := range cases {
		st := c.a.NewState()
		d := c.a.Apply(st, today, algo.Request{N: 1})
		if !d.Allowed || d.Limit != c.limit {
			t.Errorf("%v: first request %+v, want allowed with Limit %d", c.a, d, c.limit)
		}
		d = c.a.Apply(st, today+1e12, algo.Request{N: never1})
		if d.Remaining != c.idleLeft || d.Limit != c.limit || d.RetryAfter != algo.Never {
			t.Errorf("%v: after idleness %+v, want Remaining %d", c.a, d, c.idleLeft)
		}
	}
}

func TestSmoothInfiniteRate(t *testing.T) {
	t.Parallel()
	for _, a := range []algo.Algorithm{
		algo.SmoothBursty{Rate: math.Inf(1)},
		algo.SmoothWarmingUp{Rate: math.Inf(1), Warmup: 10 * time.Second},
		algo.SmoothWarmingUp{Rate: math.Inf(1)}, // Guava computes 0/0 for its maxPermits
	} {
		st := a.NewState()
		for i, n := range []int64{1 << 40, 1 << 53, 1, 7} {
			d := a.Apply(st, today+int64(i), algo.Request{N: n})
			want := algo.Decision{Allowed: true, Limit: 1 << 53, Remaining: 1 << 53, ResetAfter: linger, At: today + int64(i)}
			if d != want {
				t.Errorf("%v: Apply(N=%d) = %+v, want %+v", a, n, d, want)
			}
		}
	}
}

func TestSmoothConfigChange(t *testing.T) {
	t.Parallel()
	// MaxBurstSeconds 1 → 2 (which Guava cannot change) rescales like a rate change: a
	// full key stays full (5 of 5 → 10 of 10).
	st := algo.SmoothBursty{Rate: 5}.NewState()
	algo.SmoothBursty{Rate: 5}.Apply(st, today, algo.Request{N: 1})
	d := algo.SmoothBursty{Rate: 5, MaxBurstSeconds: 2}.Apply(st, today+10*sec, algo.Request{N: never1})
	if d.Remaining != 10 || d.Limit != 10 {
		t.Errorf("after MaxBurstSeconds 1 → 2 on a full key: %+v, want Limit and Remaining 10", d)
	}
	// MaxBurstSeconds 0 and 1 are the same config: no change, no rescale.
	d = algo.SmoothBursty{Rate: 5, MaxBurstSeconds: 1}.Apply(st, today+10*sec, algo.Request{N: never1})
	d0 := algo.SmoothBursty{Rate: 5}.Apply(st, today+10*sec, algo.Request{N: never1})
	if d.Remaining != 5 || d0 != d {
		t.Errorf("MaxBurstSeconds 0 and 1 decide differently: %+v and %+v", d0, d)
	}
	// A warm-up change of a cold key keeps it cold: 8 of 8 (4 s) → 16 of 16 (8 s).
	w := algo.SmoothWarmingUp{Rate: 2, Warmup: 4 * time.Second}
	st = w.NewState()
	w.Apply(st, today, algo.Request{N: never1})
	w.Warmup = 8 * time.Second
	if d := w.Apply(st, today, algo.Request{N: never1}); d.Remaining != 16 || d.Limit != 16 || d.ResetAfter != 0 {
		t.Errorf("after Warmup 4 s → 8 s on a cold key: %+v, want a fresh key of 16 permits", d)
	}
}

func TestSmoothRefundIsNoOp(t *testing.T) {
	t.Parallel()
	for _, a := range []algo.Algorithm{algo.SmoothBursty{Rate: 3}, algo.SmoothWarmingUp{Rate: 3, Warmup: time.Second}} {
		st, twin := a.NewState(), a.NewState()
		for _, s := range []algo.State{st, twin} {
			a.Apply(s, today, algo.Request{N: 4})
		}
		a.Refund(st, today+1, 4, today)
		a.Refund(a.NewState(), today, 1, today) // on a fresh state: nothing, no panic
		for i := int64(0); i < 5; i++ {
			req := algo.Request{N: 1 + i%2, MaxWait: time.Duration(i) * 300 * time.Millisecond}
			if got, want := a.Apply(st, today+i*sec/3, req), a.Apply(twin, today+i*sec/3, req); got != want {
				t.Fatalf("%v: after a refund %+v, without %+v", a, got, want)
			}
		}
	}
}

func TestSmoothValidate(t *testing.T) {
	t.Parallel()
	inf, nan := math.Inf(1), math.NaN()
	cases := []struct {
		a     algo.Algorithm
		field string // "" when valid
	}{
		{algo.SmoothBursty{Rate: 5}, ""},
		{algo.SmoothBursty{Rate: inf}, ""},
		{algo.SmoothBursty{Rate: 1e-15, MaxBurstSeconds: 1e9}, ""},
		{algo.SmoothBursty{Rate: 1e15, MaxBurstSeconds: 1e-300}, ""},
		{algo.SmoothBursty{Rate: 0}, "SmoothBursty.Rate"},
		{algo.SmoothBursty{Rate: -1}, "SmoothBursty.Rate"},
		{algo.SmoothBursty{Rate: -inf}, "SmoothBursty.Rate"},
		{algo.SmoothBursty{Rate: nan}, "SmoothBursty.Rate"},
		{algo.SmoothBursty{Rate: 1e-16}, "SmoothBursty.Rate"},
		{algo.SmoothBursty{Rate: 2e15}, "SmoothBursty.Rate"},
		{algo.SmoothBursty{Rate: 1, MaxBurstSeconds: -1}, "SmoothBursty.MaxBurstSeconds"},
		{algo.SmoothBursty{Rate: 1, MaxBurstSeconds: nan}, "SmoothBursty.MaxBurstSeconds"},
		{algo.SmoothBursty{Rate: 1, MaxBurstSeconds: inf}, "SmoothBursty.MaxBurstSeconds"},
		{algo.SmoothBursty{Rate: 1, MaxBurstSeconds: 2e9}, "SmoothBursty.MaxBurstSeconds"},
		{algo.SmoothWarmingUp{Rate: 2, Warmup: time.Second}, ""},
		{algo.SmoothWarmingUp{Rate: 2}, ""},
		{algo.SmoothWarmingUp{Rate: inf, Warmup: time.Hour, ColdFactor: 1}, ""},
		{algo.SmoothWarmingUp{Rate: 2, Warmup: time.Duration(algo.MaxMicros) * time.Microsecond, ColdFactor: 1e6}, ""},
		{algo.SmoothWarmingUp{Rate: 2, Warmup: math.MaxInt64, ColdFactor: 1e6}, "Warmup"},
		{algo.SmoothWarmingUp{Rate: 0, Warmup: time.Second}, "SmoothWarmingUp.Rate"},
		{algo.SmoothWarmingUp{Rate: nan}, "SmoothWarmingUp.Rate"},
		{algo.SmoothWarmingUp{Rate: -inf}, "SmoothWarmingUp.Rate"},
		{algo.SmoothWarmingUp{Rate: 2, Warmup: -1}, "SmoothWarmingUp.Warmup"},
		{algo.SmoothWarmingUp{Rate: 2, ColdFactor: 0.5}, "SmoothWarmingUp.ColdFactor"},
		{algo.SmoothWarmingUp{Rate: 2, ColdFactor: -3}, "SmoothWarmingUp.ColdFactor"},
		{algo.SmoothWarmingUp{Rate: 2, ColdFactor: nan}, "SmoothWarmingUp.ColdFactor"},
		{algo.SmoothWarmingUp{Rate: 2, ColdFactor: inf}, "SmoothWarmingUp.ColdFactor"},
		{algo.SmoothWarmingUp{Rate: 2, ColdFactor: 2e6}, "SmoothWarmingUp.ColdFactor"},
	}
	for _, c := range cases {
		err := c.a.Validate()
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%#v: Validate() = %v, want nil", c.a, err)
		case c.field != "" && (!errors.Is(err, algo.ErrInvalidConfig) || !strings.Contains(fmt.Sprint(err), c.field)):
			t.Errorf("%#v: Validate() = %v, want an ErrInvalidConfig naming %s", c.a, err, c.field)
		}
	}
}

func TestSmoothNames(t *testing.T) {
	t.Parallel()
	b, w := algo.SmoothBursty{Rate: 5}, algo.SmoothWarmingUp{Rate: 2, Warmup: 3 * time.Second}
	if b.Name() != "smooth-bursty" || b.Slot() != "smb" || w.Name() != "smooth-warmup" || w.Slot() != "smw" {
		t.Errorf("names and slots: %q %q %q %q", b.Name(), b.Slot(), w.Name(), w.Slot())
	}
	if got, want := b.String(), "smooth-bursty(rate=5/s, max-burst=1s)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got, want := w.String(), "smooth-warmup(rate=2/s, warmup=3s, cold-factor=3)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// ExampleSmoothWarmingUp shows Guava's warm-up curve: a cold key paces its first permits
// at up to 3 times the stable interval, each request paying for the one before it.
func ExampleSmoothWarmingUp() {
	a := algo.SmoothWarmingUp{Rate: 2, Warmup: 4 * time.Second}
	st := a.NewState()
	now := int64(1_767_225_600_000_000) // µs
	for i := 0; i < 6; i++ {
		d := a.Apply(st, now, algo.Request{N: 1, MaxWait: algo.Forever})
		fmt.Printf("acquire %d waits %v\n", i+1, d.Wait)
		now = d.At // sleep until then
	}
	// Output:
	// acquire 1 waits 0s
	// acquire 2 waits 1.375s
	// acquire 3 waits 1.125s
	// acquire 4 waits 875ms
	// acquire 5 waits 625ms
	// acquire 6 waits 500ms
}
