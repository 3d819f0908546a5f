package algo_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

func TestRequestValidate(t *testing.T) {
	t.Parallel()
	for _, n := range []int64{0, -1, math.MinInt64} {
		err := algo.Request{N: n}.Validate()
		if !errors.Is(err, algo.ErrInvalidRequest) || !strings.Contains(err.Error(), "N") {
			t.Errorf("Request{N: %d}.Validate() = %v, want an ErrInvalidRequest naming N", n, err)
		}
	}
	for _, r := range []algo.Request{{N: 1}, {N: math.MaxInt64}, {N: 1, MaxWait: -time.Second}, {N: 1, MaxWait: algo.Forever}} {
		if err := r.Validate(); err != nil {
			t.Errorf("%+v.Validate() = %v, want nil", r, err)
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	const big = 1<<53 + 1
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		a     algo.Algorithm
		field string // "" when valid
	}{
		{algo.FixedWindow{Limit: 1, Window: time.Microsecond}, ""},
		{algo.FixedWindow{Limit: 1 << 53, Window: time.Duration(algo.MaxMicros) * time.Microsecond}, ""},
		{algo.FixedWindow{Limit: 1, Window: time.Duration(algo.MaxMicros+1) * time.Microsecond}, "FixedWindow.Window"},
		{algo.SlidingWindowLog{Limit: 1, Window: math.MaxInt64 / 1000 * 1000}, "SlidingWindowLog.Window"},
		{algo.SlidingWindowCounter{Limit: 1, Window: time.Duration(algo.MaxMicros+1) * time.Microsecond}, "SlidingWindowCounter.Window"},
		{algo.FixedWindow{Limit: 0, Window: time.Second}, "FixedWindow.Limit"},
		{algo.FixedWindow{Limit: -1, Window: time.Second}, "FixedWindow.Limit"},
		{algo.FixedWindow{Limit: big, Window: time.Second}, "FixedWindow.Limit"},
		{algo.FixedWindow{Limit: 1}, "FixedWindow.Window"},
		{algo.FixedWindow{Limit: 1, Window: -time.Second}, "FixedWindow.Window"},
		{algo.FixedWindow{Limit: 1, Window: 999 * time.Nanosecond}, "FixedWindow.Window"},
		{algo.FixedWindow{Limit: 1, Window: 1500 * time.Nanosecond}, "FixedWindow.Window"},

		{algo.SlidingWindowLog{Limit: 1 << 53, Window: time.Microsecond}, ""},
		{algo.SlidingWindowLog{Limit: 0, Window: time.Second}, "SlidingWindowLog.Limit"},
		{algo.SlidingWindowLog{Limit: big, Window: time.Second}, "SlidingWindowLog.Limit"},
		{algo.SlidingWindowLog{Limit: 1}, "SlidingWindowLog.Window"},
		{algo.SlidingWindowLog{Limit: 1, Window: 1001 * time.Nanosecond}, "SlidingWindowLog.Window"},

		{algo.SlidingWindowCounter{Limit: 1 << 53, Window: time.Microsecond}, ""},
		{algo.SlidingWindowCounter{Limit: -5, Window: time.Second}, "SlidingWindowCounter.Limit"},
		{algo.SlidingWindowCounter{Limit: big, Window: time.Second}, "SlidingWindowCounter.Limit"},
		{algo.SlidingWindowCounter{Limit: 1, Window: -time.Microsecond}, "SlidingWindowCounter.Window"},
		{algo.SlidingWindowCounter{Limit: 1, Window: time.Nanosecond}, "SlidingWindowCounter.Window"},

		{algo.TokenBucket{Rate: 1e-6, Burst: 1 << 53}, ""},
		{algo.TokenBucket{Rate: 1e9, Burst: 1}, ""},
		{algo.TokenBucket{Rate: nan, Burst: 1}, "TokenBucket.Rate"},
		{algo.TokenBucket{Rate: inf, Burst: 1}, "TokenBucket.Rate"},
		{algo.TokenBucket{Rate: -inf, Burst: 1}, "TokenBucket.Rate"},
		{algo.TokenBucket{Rate: 0, Burst: 1}, "TokenBucket.Rate"},
		{algo.TokenBucket{Rate: -1, Burst: 1}, "TokenBucket.Rate"},
		{algo.TokenBucket{Rate: 1.000001e9, Burst: 1}, "TokenBucket.Rate"},
		{algo.TokenBucket{Rate: 1, Burst: 0}, "TokenBucket.Burst"},
		{algo.TokenBucket{Rate: 1, Burst: big}, "TokenBucket.Burst"},

		{algo.LeakyBucket{Rate: 1e-6, Capacity: 1 << 53}, ""},
		{algo.LeakyBucket{Rate: 1e9, Capacity: 1}, ""},
		{algo.LeakyBucket{Rate: nan, Capacity: 1}, "LeakyBucket.Rate"},
		{algo.LeakyBucket{Rate: inf, Capacity: 1}, "LeakyBucket.Rate"},
		{algo.LeakyBucket{Rate: 0, Capacity: 1}, "LeakyBucket.Rate"},
		{algo.LeakyBucket{Rate: -0.5, Capacity: 1}, "LeakyBucket.Rate"},
		{algo.LeakyBucket{Rate: 1, Capacity: -1}, "LeakyBucket.Capacity"},
		{algo.LeakyBucket{Rate: 1, Capacity: big}, "LeakyBucket.Capacity"},

		{algo.GCRA{Rate: 1e6, Burst: 1e15}, ""},
		{algo.GCRA{Rate: 1e-6, Burst: 1000}, ""},
		{algo.GCRA{Rate: nan, Burst: 1}, "GCRA.Rate"},
		{algo.GCRA{Rate: -inf, Burst: 1}, "GCRA.Rate"},
		{algo.GCRA{Rate: 0, Burst: 1}, "GCRA.Rate"},
		{algo.GCRA{Rate: 1.5e6, Burst: 1}, "GCRA.Rate"},
		{algo.GCRA{Rate: 1e9, Burst: 1}, "GCRA.Rate"},
		{algo.GCRA{Rate: 1, Burst: 0}, "GCRA.Burst"},
		{algo.GCRA{Rate: 1e6, Burst: 1e15 + 1}, "GCRA.Burst"},
		{algo.GCRA{Rate: 1e-6, Burst: 1001}, "GCRA.Burst"},
		{algo.GCRA{Rate: 1e6, Burst: 1 << 53}, "GCRA.Burst"},
	}
	for _, tt := range tests {
		err := tt.a.Validate()
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%#v.Validate() = %v, want nil", tt.a, err)
		case tt.field != "" && !errors.Is(err, algo.ErrInvalidConfig):
			t.Errorf("%#v.Validate() = %v, want an ErrInvalidConfig", tt.a, err)
		case tt.field != "" && !strings.Contains(err.Error(), tt.field):
			t.Errorf("%#v.Validate() = %v, want it to name %s", tt.a, err, tt.field)
		}
	}
}

func TestNamesAndSlots(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a                  algo.Algorithm
		name, slot, string string
	}{
		{algo.FixedWindow{Limit: 5, Window: time.Second}, "fixed-window", "fw:1000000", "fixed-window(limit=5, window=1s)"},
		{algo.SlidingWindowLog{Limit: 5, Window: time.Minute}, "sliding-log", "sl:60000000", "sliding-log(limit=5, window=1m0s)"},
		{algo.SlidingWindowCounter{Limit: 5, Window: time.Millisecond}, "sliding-counter", "sc:1000", "sliding-counter(limit=5, window=1ms)"},
		{algo.TokenBucket{Rate: 2.5, Burst: 5}, "token-bucket", "tb", "token-bucket(rate=2.5/s, burst=5)"},
		{algo.LeakyBucket{Rate: 2.5, Capacity: 5}, "leaky-bucket", "lb", "leaky-bucket(rate=2.5/s, capacity=5)"},
		{algo.GCRA{Rate: 2.5, Burst: 5}, "gcra", "gcra", "gcra(rate=2.5/s, burst=5)"},
	}
	for _, tt := range tests {
		if got := tt.a.Name(); got != tt.name {
			t.Errorf("%#v.Name() = %q, want %q", tt.a, got, tt.name)
		}
		if got := tt.a.Slot(); got != tt.slot {
			t.Errorf("%#v.Slot() = %q, want %q", tt.a, got, tt.slot)
		}
		if got := tt.a.(interface{ String() string }).String(); got != tt.string {
			t.Errorf("%#v.String() = %q, want %q", tt.a, got, tt.string)
		}
	}
}

// TestFreshStates checks, for every algorithm, that a fresh key grants Limit at once and is
// fresh again ResetAfter later, that states are independent, and that impossible requests
// are denied with RetryAfter == Never without touching the state.
func TestFreshStates(t *testing.T) {
	t.Parallel()
	for _, a := range allAlgorithms() {
		limit := limitOf(a)
		for _, now := range []int64{-3*sec - 1, 0, today + 12345} {
			st, other := a.NewState(), a.NewState()
			for _, n := range []int64{limit + 1, 0, -1, math.MinInt64, math.MaxInt64} {
				d := a.Apply(st, now, algo.Request{N: n, MaxWait: algo.Forever})
				if want := (algo.Decision{Limit: limit, Remaining: limit, RetryAfter: algo.Never}); d != want {
					t.Fatalf("%v: fresh Apply(now=%d, N=%d) = %+v, want %+v", a, now, n, d, want)
				}
			}
			d := a.Apply(st, now, algo.Request{N: limit})
			if !d.Allowed || d.Remaining != 0 || d.Wait != 0 || d.At != now || d.ResetAfter <= 0 {
				t.Fatalf("%v: fresh Apply(now=%d, N=Limit) = %+v, want an immediate grant of all", a, now, d)
			}
			if got := a.Apply(other, now, algo.Request{N: limit}); !got.Allowed {
				t.Fatalf("%v: a second NewState shares the first one's grants: %+v", a, got)
			}
			later := now + micros(d.ResetAfter)
			if got, want := a.Apply(st, later, algo.Request{N: limit}), a.Apply(a.NewState(), later, algo.Request{N: limit}); got != want {
				t.Fatalf("%v: ResetAfter (%v) later Apply = %+v, a fresh key's %+v", a, d.ResetAfter, got, want)
			}
		}
	}
}

// TestMaxWaitRounding checks that MaxWait is rounded down to whole µs and a negative
// MaxWait is 0, for every algorithm: a grant never waits longer than asked.
func TestMaxWaitRounding(t *testing.T) {
	t.Parallel()
	for _, a := range allAlgorithms() {
		st := a.NewState()
		fill := limitOf(a)
		if _, ok := a.(algo.LeakyBucket); ok {
			fill-- // a full leaky bucket is a full queue: leave room for one
		}
		a.Apply(st, 0, algo.Request{N: fill})
		d := a.Apply(clone(st), 0, algo.Request{N: 1, MaxWait: algo.Forever})
		if !d.Allowed || d.Wait <= 0 {
			t.Fatalf("%v: reservation after exhausting = %+v", a, d)
		}
		if got, want := a.Apply(clone(st), 0, algo.Request{N: 1, MaxWait: -time.Hour}),
			a.Apply(clone(st), 0, algo.Request{N: 1}); got != want {
			t.Errorf("%v: MaxWait -1h = %+v, MaxWait 0 = %+v", a, got, want)
		}
		if got := a.Apply(clone(st), 0, algo.Request{N: 1, MaxWait: d.Wait - 1}); got.Allowed {
			t.Errorf("%v: MaxWait %v granted a wait of %v", a, d.Wait-1, got.Wait)
		}
		if got := a.Apply(clone(st), 0, algo.Request{N: 1, MaxWait: d.Wait}); got != d {
			t.Errorf("%v: MaxWait %v = %+v, want %+v", a, d.Wait, got, d)
		}
	}
}
