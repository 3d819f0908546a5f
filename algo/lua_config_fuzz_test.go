package algo

import (
	"context"
	"math"
	"math/rand"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/internal/redistest"
)

// The Go-vs-Lua differential over the whole validated config space: every config that
// Validate accepts must decide identically in Go and in its Lua twin, at the extremes too
// (Limit and Burst up to 2^53, rates from the smallest positive double to the bound,
// windows and warm-ups up to the longest Duration), with the clock stepping backwards.
// The sequences run through runTwinSeq, which compares replies,
// stored states and TTLs step by step with the fake-clock pattern (PTTL read and PERSIST
// in the script's MULTI), so real time never expires a state between fake instants.

// edgeKinds are the algorithms the fuzz target draws from: the six of luaTwins, then the
// two smooth ones.
const edgeKinds = 8

// spread maps x to [1, top], about log-uniformly: the low 6 bits pick a power of two, the
// rest a value below the next one; the ends themselves come often.
func spread(x uint64, top int64) int64 {
	switch x % 16 {
	case 0:
		return top
	case 1:
		return max(1, top-1)
	case 2:
		return 1
	}
	e := (x >> 4) % 64
	v := int64(1) << min(e, 62)
	v += int64((x >> 10) % uint64(v))
	if v < 1 || v > top {
		v = 1 + int64((x>>10)%uint64(top))
	}
	return v
}

// spreadRate maps x to (0, top], log-uniformly over the doubles' exponents from the
// smallest positive one, with the ends, round numbers and an edge above each.
func spreadRate(x uint64, lo, top float64) float64 {
	switch x % 16 {
	case 0:
		return top
	case 1:
		return lo
	case 2:
		return math.Nextafter(lo, math.Inf(1))
	case 3:
		return math.Nextafter(top, 0)
	case 4:
		return math.Pow(10, float64(int((x>>4)%40))-20) // 1e-20 … 1e19, filtered below
	}
	l := math.Log(lo)
	f := float64(x>>4) / float64(uint64(1)<<60)
	r := math.Exp(l + f*(math.Log(top)-l))
	return min(max(r, lo), top)
}

// edgeConfig builds a config of kind from raw fuzz values; ok is false when the config
// is not one Validate accepts (a store would reject it).
func edgeConfig(kind uint8, count, span, rate uint64) (Scripted, bool) {
	maxWindowUs := MaxMicros
	w := time.Duration(spread(span, maxWindowUs)) * time.Microsecond
	n := spread(count, maxExact)
	r := spreadRate(rate, math.SmallestNonzeroFloat64, 1e9)
	var a Scripted
	switch kind % edgeKinds {
	case 0:
		a = FixedWindow{Limit: n, Window: w}
	case 1:
		a = SlidingWindowLog{Limit: n, Window: w}
	case 2:
		a = SlidingWindowCounter{Limit: n, Window: w}
	case 3:
		a = TokenBucket{Rate: r, Burst: n}
	case 4:
		a = LeakyBucket{Rate: r, Capacity: n}
	case 5:
		a = GCRA{Rate: spreadRate(rate, math.SmallestNonzeroFloat64, 1e6), Burst: n} // GCRA's bound
	case 6:
		sr := spreadRate(rate, smoothMinRate, smoothMaxRate)
		if rate%17 == 16 {
			sr = math.Inf(1)
		}
		b := []float64{0, 1e-300, 1e-9, 0.5, 1, 3600, smoothMaxBurstSeconds}[count%7]
		if count%7 == 2 {
			b = spreadRate(count>>3, 1e-300, smoothMaxBurstSeconds)
		}
		a = SmoothBursty{Rate: sr, MaxBurstSeconds: b}
	default:
		sr := spreadRate(rate, smoothMinRate, smoothMaxRate)
		if rate%17 == 16 {
			sr = math.Inf(1)
		}
		cold := []float64{0, 1, 3, 1e6}[count%4]
		if count%4 == 2 {
			cold = 1 + float64(spread(count>>2, 1e6-1))*(1+float64(count%1000)/1000)
			cold = min(cold, smoothMaxColdFactor)
		}
		a = SmoothWarmingUp{Rate: sr, Warmup: time.Duration(spread(span, maxWindowUs)-1) * time.Microsecond, ColdFactor: cold}
	}
	return a, a.Validate() == nil
}

// edgeFamily is fam0 and up to two more configs of its kind and Slot (a rate or limit
// change), drawn from r across the same space.
func edgeFamily(r *rand.Rand, kind uint8, fam0 Scripted) []Scripted {
	fam := []Scripted{fam0}
	for tries := 0; tries < 20 && len(fam) < 3 && r.Intn(2) == 0; tries++ {
		a, ok := edgeConfig(kind, r.Uint64(), r.Uint64(), r.Uint64())
		if ok && a.Slot() != fam0.Slot() {
			// The window algorithms' slot holds the window: keep fam0's, change the limit.
			switch c := a.(type) {
			case FixedWindow:
				c.Window, a = fam0.(FixedWindow).Window, c
			case SlidingWindowLog:
				c.Window, a = fam0.(SlidingWindowLog).Window, c
			case SlidingWindowCounter:
				c.Window, a = fam0.(SlidingWindowCounter).Window, c
			}
		}
		if ok && a.Slot() == fam0.Slot() {
			fam = append(fam, a)
		}
	}
	return fam
}

// edgeSteps is the length of one sequence.
const edgeSteps = 150

// runEdge runs one sequence of kind's config family on rdb and fails at the first step
// where Go and Lua disagree. It reports false when the config is not valid (a store
// rejects it: nothing to compare).
func runEdge(t *testing.T, rdb *redis.Client, kind uint8, count, span, rate uint64, seed int64) bool {
	t.Helper()
	a, ok := edgeConfig(kind, count, span, rate)
	if !ok {
		return false
	}
	defer func() {
		if t.Failed() {
			t.Logf("input: kind %d, count %d, span %d, rate %d, seed %d: %v", kind, count, span, rate, seed, a)
		}
	}()
	ctx := context.Background()
	// Keys are named after the seed; a fuzz run may repeat one with other configs.
	if err := rdb.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(seed))
	fam := edgeFamily(r, kind, a)
	var st diffStats
	if k := kind % edgeKinds; k >= 6 {
		runTwinSeq(t, rdb, smoothTwin(k == 7), r, fam, seed, edgeSteps, &st)
		return true
	}
	tw := luaTwins[kind%edgeKinds]
	// Steps of a few scales at most: instants stay below 2^53 µs (runTwinSeq keeps them
	// under 5e15 by stepping back 3e15), as real clocks do until the year 2255.
	scale := tw.scale
	tw.scale = func(a Scripted) int64 { return min(scale(a), 5e14) }
	runTwinSeq(t, rdb, tw, rand.New(rand.NewSource(seed)), fam, seed, edgeSteps, &st)
	return true
}

// edgeCorpus are inputs that reach the extremes the bounds allow.
var edgeCorpus = [][5]uint64{
	// kind, count (limit), span (window), rate, seed
	{1, 0, 3, 0, 1},   // sliding log, Limit 2^53, 1µs window
	{1, 1, 0, 0, 2},   // sliding log, Limit 2^53-1, the longest window
	{0, 0, 0, 0, 3},   // fixed window, both at the top
	{2, 0, 1, 0, 4},   // sliding counter
	{3, 0, 5, 0, 5},   // token bucket, Burst 2^53, Rate 1e9
	{3, 0, 5, 1, 6},   // token bucket, the smallest rate
	{4, 0, 5, 0, 7},   // leaky bucket
	{4, 2, 5, 1, 8},   // leaky bucket, Capacity 1, the smallest rate
	{5, 2, 5, 0, 9},   // GCRA, Burst 1 at 1e6/s
	{5, 2, 5, 3, 10},  // GCRA just below the top rate
	{6, 6, 0, 0, 11},  // bursty at 1e15/s, 1e9 s of burst
	{6, 1, 0, 1, 12},  // bursty at 1e-15/s
	{7, 3, 0, 0, 13},  // warming up at 1e15/s, ColdFactor 1e6, longest warm-up
	{7, 0, 2, 0, 14},  // warming up at 1e15/s, default factor, no warm-up
	{7, 1, 1, 16, 15}, // warming up at +Inf
}

// FuzzLuaDifferentialConfigs draws a config anywhere in the validated space and a
// request sequence with backward clock steps, and demands that the Lua twin replies and
// stores exactly what the Go transition does. It needs redis-server (see startRedis).
func FuzzLuaDifferentialConfigs(f *testing.F) {
	rdb := newRedisClient(f, startRedis(f), 3)
	for _, c := range edgeCorpus {
		f.Add(uint8(c[0]), c[1], c[2], c[3], int64(c[4]))
	}
	f.Fuzz(func(t *testing.T, kind uint8, count, span, rate uint64, seed int64) {
		runEdge(t, rdb, kind, count, span, rate, seed)
	})
}

// TestLuaDifferentialConfigs is a bounded, seeded run of FuzzLuaDifferentialConfigs for
// the normal tests: each kind on a spread of configs across the whole validated space.
func TestLuaDifferentialConfigs(t *testing.T) {
	t.Parallel()
	rdb := newRedisClient(t, startRedis(t), 3)
	r := rand.New(rand.NewSource(53))
	const perKind = 25
	ran := 0
	for i := 0; i < edgeKinds*perKind; i++ {
		kind := uint8(i % edgeKinds)
		count, span, rate, seed := r.Uint64(), r.Uint64(), r.Uint64(), r.Int63()
		if runEdge(t, rdb, kind, count, span, rate, seed) {
			ran++
		}
	}
	if ran < edgeKinds*perKind/2 {
		t.Errorf("only %d of %d configs drawn were valid", ran, edgeKinds*perKind)
	}
	t.Logf("%d sequences of %d steps compared", ran, edgeSteps)
}

// TestLuaSlidingLogRefundEmptiedMiddle: a refund at an entry emptied earlier (when it was
// the newest) that later grants have pushed into the middle gives nothing back and writes
// nothing, in Lua as in Go (found by TestLuaDifferentialConfigs: the script removed it).
func TestLuaSlidingLogRefundEmptiedMiddle(t *testing.T) {
	t.Parallel()
	rdb := redistest.WithoutExpiry(newRedisClient(t, startRedis(t), 3)) // see runEdgeSteps
	const t0 = 1_700_000_000_000_000
	runEdgeSteps(t, rdb, SlidingWindowLog{Limit: 5, Window: time.Second}, "refund an emptied middle entry", []edgeStep{
		{"apply", t0, 1, 0}, {"refund", t0 + 5, 1, t0}, {"apply", t0 + 10, 1, 0},
		{"refund", t0 + 20, 1, t0}, {"apply", t0 + 30, 5, 2_000_000}})
}

// TestSlidingLogTotalCap: a sliding log never holds more than 2^53 permits, so that its
// total is exact in the Lua twin: a reservation a window ahead that would push it beyond
// is denied until the entries in the way have left the window (the script's total rounded
// to an even double, and it over-admitted by one, before).
func TestSlidingLogTotalCap(t *testing.T) {
	t.Parallel()
	a := SlidingWindowLog{Limit: maxExact - 1, Window: time.Second}
	const t0 = 1_700_000_000_000_000
	st := a.NewState()
	if d := a.Apply(st, t0, Request{N: maxExact - 1}); !d.Allowed {
		t.Fatalf("first request: %+v", d)
	}
	d := a.Apply(st, t0+10, Request{N: 2, MaxWait: Forever})
	if d.Allowed || d.RetryAfter != time.Second-10*time.Microsecond {
		t.Fatalf("a reservation that would hold 2^53+1 permits: %+v, want denied for 999990µs", d)
	}
	if d := a.Apply(st, t0+1_000_000, Request{N: 2}); !d.Allowed {
		t.Fatalf("once the first entry left: %+v, want granted", d)
	}
	rdb := redistest.WithoutExpiry(newRedisClient(t, startRedis(t), 3)) // see runEdgeSteps
	runEdgeSteps(t, rdb, a, "total cap", []edgeStep{
		{"apply", t0, maxExact - 1, 0}, {"apply", t0 + 10, 2, MaxMicros}, {"apply", t0 + 20, 1, 2_000_000},
		{"apply", t0 + 1_000_000, 2, 0}, {"apply", t0 + 1_000_001, maxExact - 3, 0}, {"apply", t0 + 1_000_002, 1, 5_000_000}})
}

// TestSlidingLogTotalCapRetryAfterCountsTheLimit: a request denied by the 2^53 cap waits
// until the cap has room and also until the window has room for it: its RetryAfter is the
// later of the two (FuzzSlidingLog found it giving only the first, after which the same
// request was denied again).
func TestSlidingLogTotalCapRetryAfterCountsTheLimit(t *testing.T) {
	t.Parallel()
	const L, w, t0 = maxExact - 55, 464_433, 1_700_000_000_000_000
	a := SlidingWindowLog{Limit: L, Window: w * time.Microsecond}
	st := a.NewState()
	later := int64(t0 + 420_945)
	if d := a.Apply(st, t0-10_000, Request{N: 60}); !d.Allowed {
		t.Fatalf("60 at t0-10ms: %+v", d)
	}
	if d := a.Apply(st, later, Request{N: 6}); !d.Allowed {
		t.Fatalf("6 at t0+420.945ms: %+v", d)
	}
	// Back at t0: 66 permits live, N = L-2 fits under the cap once the 60 have left, and
	// under the limit once the 6 have left too.
	d := a.Apply(st, t0, Request{N: L - 2})
	want := toDuration(later + w - t0)
	if d.Allowed || d.RetryAfter != want {
		t.Fatalf("L-2 at t0: %+v, want denied for %v", d, want)
	}
	probe := st.(*slidingLogState).CloneState()
	if d := a.Apply(probe, t0+int64(want/time.Microsecond)-1, Request{N: L - 2}); d.Allowed {
		t.Fatalf("1µs before RetryAfter: %+v, want denied", d)
	}
	if d := a.Apply(st, t0+int64(want/time.Microsecond), Request{N: L - 2}); !d.Allowed {
		t.Fatalf("RetryAfter later: %+v, want granted", d)
	}
	rdb := redistest.WithoutExpiry(newRedisClient(t, startRedis(t), 3)) // see runEdgeSteps
	runEdgeSteps(t, rdb, a, "cap and limit", []edgeStep{
		{"apply", t0 - 10_000, 60, 0}, {"apply", later, 6, 0}, {"apply", t0, L - 2, 0},
		{"apply", t0, L - 2, 100_000}, {"apply", later + w - 1, L - 2, 0}, {"apply", later + w, L - 2, 0}})
}
