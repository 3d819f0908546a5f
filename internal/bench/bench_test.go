package bench

import (
	"context"
	"errors"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/store"
)

func TestHistogramBuckets(t *testing.T) {
	t.Parallel()
	// Every value lies in its bucket, and buckets tile the values without gaps.
	for _, v := range []uint64{0, 1, 31, 32, 33, 63, 64, 65, 127, 128, 1000, 1 << 40, math.MaxInt64} {
		b := bucket(v)
		if up := upper(b); v > up {
			t.Errorf("value %d in bucket %d whose upper bound is %d", v, b, up)
		}
		if b > 0 && v <= upper(b-1) {
			t.Errorf("value %d in bucket %d, but bucket %d ends at %d", v, b, b-1, upper(b-1))
		}
		if b >= numBuckets {
			t.Errorf("value %d in bucket %d, beyond %d", v, b, numBuckets)
		}
	}
	for b := 1; b < numBuckets; b++ {
		if got, want := bucket(upper(b-1)+1), b; got != want {
			t.Fatalf("first value after bucket %d is in bucket %d, want %d", b-1, got, want)
		}
	}
}

func TestHistogramQuantilesWithinError(t *testing.T) {
	t.Parallel()
	const seed = 20260101
	rng := rand.New(rand.NewPCG(seed, 1))
	var parts [4]Histogram
	var all []time.Duration
	for i := 0; i < 20000; i++ {
		// Log-uniform from 1 ns to about 1 s.
		d := time.Duration(math.Exp(rng.Float64() * math.Log(1e9)))
		parts[i%4].Record(d)
		all = append(all, d)
	}
	var h Histogram
	for i := range parts {
		h.Merge(&parts[i])
	}
	slices.Sort(all)
	if got, want := h.Count(), uint64(len(all)); got != want {
		t.Fatalf("seed %d: Count = %d, want %d", seed, got, want)
	}
	if got, want := h.Max(), all[len(all)-1]; got != want {
		t.Errorf("seed %d: Max = %v, want %v", seed, got, want)
	}
	for _, q := range []float64{0, 0.01, 0.25, 0.5, 0.9, 0.99, 0.999, 1} {
		exact := all[max(0, int(math.Ceil(q*float64(len(all))))-1)]
		got := h.Quantile(q)
		if got < exact || float64(got-exact) > float64(exact)/subCount {
			t.Errorf("seed %d: Quantile(%g) = %v, exact %v: not within [exact, exact × (1 + 1/32)]", seed, q, got, exact)
		}
	}
	var sum time.Duration
	for _, d := range all {
		sum += d
	}
	if got, want := h.Mean(), sum/time.Duration(len(all)); got != want {
		t.Errorf("seed %d: Mean = %v, want %v", seed, got, want)
	}
}

func TestHistogramEdges(t *testing.T) {
	t.Parallel()
	var h Histogram
	if h.Quantile(0.5) != 0 || h.Max() != 0 || h.Mean() != 0 || h.Count() != 0 {
		t.Error("an empty histogram reports values")
	}
	h.Merge(&Histogram{})
	h.Record(-5)
	h.Record(1000)
	if got := h.Quantile(0); got != 0 {
		t.Errorf("Quantile(0) = %v, want 0 (negative recorded as 0)", got)
	}
	if got := h.Quantile(math.NaN()); got != 0 {
		t.Errorf("Quantile(NaN) = %v, want the smallest", got)
	}
	if got, want := h.Quantile(2), time.Duration(1000); got != want {
		t.Errorf("Quantile(2) = %v, want the largest, %v", got, want)
	}
}

func TestRunAgainstLocal(t *testing.T) {
	t.Parallel()
	s := &perKey{Store: teststore.Local(t)}
	t.Cleanup(func() { _ = s.Close() })
	const burst = 5
	res, err := Run(context.Background(), Config{
		Store: s, Algorithm: algo.TokenBucket{Rate: 1, Burst: burst}, Goroutines: 4, Keys: 3,
		Duration: 150 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Decisions <= 0 || res.Rate() <= 0 || res.Errors != 0 || res.Interrupted {
		t.Errorf("result %+v: want decisions, no error, not interrupted", res)
	}
	// How many calls each key got depends on the scheduler, so the bounds are per key, from
	// the calls it got: a full bucket of 5 admits its first 5 calls, then 1 more per whole
	// second it has existed (at most the run's Elapsed).
	var lo, hi, calls int64
	for k, n := range s.counts() {
		lo += min(n, burst)
		hi += min(n, burst+int64(res.Elapsed/time.Second))
		calls += n
		if k != "k0" && k != "k1" && k != "k2" {
			t.Errorf("Run used key %q, want k0 to k2", k)
		}
	}
	if calls != res.Decisions {
		t.Errorf("%d decisions reported, the store made %d", res.Decisions, calls)
	}
	if res.Admitted < lo || res.Admitted > hi {
		t.Errorf("admitted %d of %d calls in %v (%v per key), want %d to %d", res.Admitted, calls, res.Elapsed, s.counts(), lo, hi)
	}
	if got, want := res.Latency.Count(), uint64(res.Decisions); got != want {
		t.Errorf("latency samples %d, want one per decision (%d)", got, want)
	}
	if r := res.AdmittedRatio(); r <= 0 || r > 1 {
		t.Errorf("AdmittedRatio = %g", r)
	}
	if res.Elapsed < 150*time.Millisecond {
		t.Errorf("Elapsed = %v, shorter than the run", res.Elapsed)
	}
}

// TestRunProgress checks that Progress is called while the run lasts, with growing elapsed
// times and decision counts. The run would last an hour: the third call ends it, so the
// test does not depend on how many 1 ms periods the scheduler lets pass.
func TestRunProgress(t *testing.T) {
	t.Parallel()
	s := teststore.Local(t)
	t.Cleanup(func() { _ = s.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var calls []time.Duration
	var counts []int64
	res, err := Run(ctx, Config{
		Store: s, Algorithm: algo.TokenBucket{Rate: 1, Burst: 5}, Goroutines: 2, Keys: 3,
		Duration: time.Hour, ProgressEvery: time.Millisecond,
		Progress: func(elapsed time.Duration, decisions int64) {
			calls, counts = append(calls, elapsed), append(counts, decisions) // one goroutine
			if len(calls) == 3 {
				cancel()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || len(calls) < 3 {
		t.Fatalf("Progress called %d times, run interrupted %v; want 3 calls, the last of which cancelled the run", len(calls), res.Interrupted)
	}
	for i := range calls {
		if calls[i] <= 0 || i > 0 && (calls[i] < calls[i-1] || counts[i] < counts[i-1]) {
			t.Errorf("Progress calls (elapsed, decisions) %v, %v: want growing", calls, counts)
			break
		}
	}
	if last := counts[len(counts)-1]; res.Decisions < last {
		t.Errorf("%d decisions in the result, fewer than the %d Progress reported", res.Decisions, last)
	}
}

// perKey is a store that counts the decisions it made for each key.
type perKey struct {
	store.Store
	mu sync.Mutex
	n  map[string]int64
}

func (s *perKey) Apply(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	d, err := s.Store.Apply(ctx, key, a, req)
	if err == nil {
		s.mu.Lock()
		if s.n == nil {
			s.n = map[string]int64{}
		}
		s.n[key]++
		s.mu.Unlock()
	}
	return d, err
}

func (s *perKey) counts() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.n)
}

// failing is a store whose every call fails.
type failing struct{ store.Store }

var errDown = errors.New("down")

func (failing) Apply(context.Context, string, algo.Algorithm, algo.Request) (algo.Decision, error) {
	return algo.Decision{}, errDown
}

func TestRunCountsErrorsAndStopsOnCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Run(ctx, Config{Store: failing{}, Algorithm: algo.GCRA{Rate: 1, Burst: 1}, Goroutines: 2, Keys: 1, Duration: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted {
		t.Error("a cancelled run is not Interrupted")
	}
	if res.Decisions != 0 || (res.Errors > 0) != errors.Is(res.FirstError, errDown) {
		t.Errorf("result %+v: want no decision, FirstError set when Errors > 0", res)
	}
	if res.Rate() != 0 || res.AdmittedRatio() != 0 {
		t.Errorf("Rate %g, AdmittedRatio %g of no decision, want 0", res.Rate(), res.AdmittedRatio())
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	t.Parallel()
	s := teststore.Local(t)
	t.Cleanup(func() { _ = s.Close() })
	a := algo.GCRA{Rate: 1, Burst: 1}
	for name, cfg := range map[string]Config{
		"no store":      {Algorithm: a, Goroutines: 1, Keys: 1, Duration: time.Second},
		"no algorithm":  {Store: s, Goroutines: 1, Keys: 1, Duration: time.Second},
		"no goroutine":  {Store: s, Algorithm: a, Keys: 1, Duration: time.Second},
		"no key":        {Store: s, Algorithm: a, Goroutines: 1, Duration: time.Second},
		"no duration":   {Store: s, Algorithm: a, Goroutines: 1, Keys: 1},
		"bad algorithm": {Store: s, Algorithm: algo.GCRA{}, Goroutines: 1, Keys: 1, Duration: time.Second},
	} {
		if _, err := Run(context.Background(), cfg); !errors.Is(err, ErrConfig) && !errors.Is(err, algo.ErrInvalidConfig) {
			t.Errorf("%s: error %v, want ErrConfig or algo.ErrInvalidConfig", name, err)
		}
	}
}
