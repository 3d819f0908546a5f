package algo

import (
	"fmt"
	"math"
	"math/rand"
	"strconv"
	"strings"
	"time"
)

// luaTwin describes how the differential tests (runTwinSeq) drive and inspect one
// algorithm.
type luaTwin struct {
	name   string
	family func(r *rand.Rand) []Scripted // configs sharing one Slot (a rate change, a new limit)
	limit  func(a Scripted) int64        // the largest N
	scale  func(a Scripted) int64        // the algorithm's characteristic time in µs
	// snap is a comparable copy of a Go state; a fresh state snaps to the zero value.
	snap func(st State) any
	// stored parses the Redis keys into the same form as snap (empty maps: no keys).
	stored func(h map[string]string, list []string) (any, error)
	// reset is the time in µs until the Go state is fresh again (what the script's TTL is).
	reset func(a Scripted, st State, now int64) int64
	// shape is how runTwinSeq draws the steps; nil is rateShape.
	shape *seqShape
	// functions runs the twin as its Redis 7 function (luawire.RateLibrary, as the Redis store builds it; FCALL) instead of
	// EVALSHA of Script.Source.
	functions bool
}

type rateSnap struct {
	valid bool
	x     uint64 // tokens, level or TAT, as float64 bits
	last  int64
	act   int64  // when the latest grant acts
	iv    uint64 // GCRA: the interval, as float64 bits
	rb    bool
	rate  uint64 // the buckets' rate of the last write, as float64 bits
	burst int64  // GCRA's burst of the last write
}

type logSnap struct {
	entries string // "T:N,T:N" oldest first
	total   int64
}

var (
	// The longest window Validate accepts (MaxMicros µs) comes last.
	luaWindows = []int64{1, 3, 1000, 250_000, 1_000_000, 60_000_000, 3_600_000_000, MaxMicros}
	luaLimits  = []int64{1, 2, 3, 5, 10, 50, 1000, maxExact}
	// 1e-9 and 1e-7 per second make every wait reach MaxMicros.
	luaRates  = []float64{1e-9, 1e-7, 7e-4, 1.0 / 3, 0.5, 1, 3.7, 10, 100, 1e3, 1e6, 5e6, 1e9}
	luaBursts = []int64{1, 2, 5, 20, 100, maxExact}
)

func luaPick[T any](r *rand.Rand, xs []T) T { return xs[r.Intn(len(xs))] }

// windowFamily returns 1–3 configs with one window and various luaLimits.
func windowFamily(mk func(limit int64, w time.Duration) Scripted) func(*rand.Rand) []Scripted {
	return func(r *rand.Rand) []Scripted {
		w := time.Duration(luaPick(r, luaWindows[:len(luaWindows)-1])) * time.Microsecond
		if r.Intn(6) == 0 {
			w = time.Duration(luaPick(r, luaWindows)) * time.Microsecond
		}
		fam := make([]Scripted, 1+r.Intn(3))
		for i := range fam {
			fam[i] = mk(luaPick(r, luaLimits[:len(luaLimits)-1]), w)
			if r.Intn(4) == 0 {
				fam[i] = mk(luaPick(r, luaLimits), w)
			}
		}
		return fam
	}
}

// rateFamily returns 1–3 configs with various luaRates and sizes.
func rateFamily(mk func(rate float64, size int64) Scripted) func(*rand.Rand) []Scripted {
	return func(r *rand.Rand) []Scripted {
		fam := make([]Scripted, 1+r.Intn(3))
		for i := 0; i < len(fam); {
			rate := luaPick(r, luaRates)
			if r.Intn(3) == 0 {
				rate = math.Exp(r.Float64()*16 - 6) // an arbitrary float in [2.5e-3, 2.2e4]
			}
			size := luaPick(r, luaBursts[:len(luaBursts)-1])
			if r.Intn(4) == 0 {
				size = luaPick(r, luaBursts)
			}
			if fam[i] = mk(rate, size); fam[i].Validate() == nil { // a store rejects the others
				i++
			}
		}
		return fam
	}
}

func rateScale(rate float64, size int64) int64 {
	return max(1, min(1e12, int64(float64(size)/rate*1e6)))
}

func parseInts(h map[string]string, fields ...string) ([]int64, error) {
	if len(h) != len(fields) {
		return nil, fmt.Errorf("hash %v: want exactly the fields %v", h, fields)
	}
	out := make([]int64, len(fields))
	for i, f := range fields {
		v, err := strconv.ParseInt(h[f], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f, err)
		}
		out[i] = v
	}
	return out, nil
}

// parseRate parses a bucket's hash: the main float field, last (token and leaky buckets),
// act, iv (GCRA) and rb (token bucket and GCRA). act, iv and rb may be missing, in keys
// written by an older version (and crafted as such): they parse as 0 and false, what the Go
// state holds for them.
func parseRate(h map[string]string, field string, withLast bool) (rateSnap, error) {
	if len(h) == 0 {
		return rateSnap{}, nil
	}
	s := rateSnap{valid: true}
	for f, v := range h {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return rateSnap{}, fmt.Errorf("field %s: %w", f, err)
		}
		switch {
		case f == field:
			s.x = math.Float64bits(x)
		case f == "last":
			s.last = int64(x)
		case f == "act":
			s.act = int64(x)
		case f == "iv" && !withLast:
			s.iv = math.Float64bits(x)
		case f == "rb" && field != "level":
			s.rb = x == 1
		case f == "burst" && !withLast:
			s.burst = int64(x)
		case f == "rate" && withLast:
			s.rate = math.Float64bits(x)
		default:
			return rateSnap{}, fmt.Errorf("hash %v: unexpected field %s", h, f)
		}
	}
	if _, ok := h[field]; !ok {
		return rateSnap{}, fmt.Errorf("hash %v: no field %s", h, field)
	}
	return s, nil
}

var luaTwins = []luaTwin{
	{
		name:   "fixed-window",
		family: windowFamily(func(l int64, w time.Duration) Scripted { return FixedWindow{Limit: l, Window: w} }),
		limit:  func(a Scripted) int64 { return a.(FixedWindow).Limit },
		scale:  func(a Scripted) int64 { return micros(a.(FixedWindow).Window) },
		snap:   func(st State) any { return *st.(*fixedWindowState) },
		stored: func(h map[string]string, _ []string) (any, error) {
			if len(h) == 0 {
				return fixedWindowState{}, nil
			}
			v, err := parseInts(h, "win", "count")
			if err != nil {
				return nil, err
			}
			return fixedWindowState{valid: true, win: v[0], count: v[1]}, nil
		},
		reset: func(a Scripted, st State, now int64) int64 {
			s := st.(*fixedWindowState)
			if !s.valid {
				return 0
			}
			return a.(FixedWindow).reset(s.win, now, s.count)
		},
	},
	{
		name:   "sliding-log",
		family: windowFamily(func(l int64, w time.Duration) Scripted { return SlidingWindowLog{Limit: l, Window: w} }),
		limit:  func(a Scripted) int64 { return a.(SlidingWindowLog).Limit },
		scale:  func(a Scripted) int64 { return micros(a.(SlidingWindowLog).Window) },
		snap: func(st State) any {
			s := st.(*slidingLogState)
			var b strings.Builder
			for i, e := range s.entries[s.head:] {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, "%d:%d", e.t, e.n)
			}
			return logSnap{entries: b.String(), total: s.total}
		},
		stored: func(h map[string]string, list []string) (any, error) {
			if len(h) == 0 && len(list) == 0 {
				return logSnap{}, nil
			}
			v, err := parseInts(h, "total")
			if err != nil {
				return nil, err
			}
			return logSnap{entries: strings.Join(list, ","), total: v[0]}, nil
		},
		reset: func(a Scripted, st State, now int64) int64 {
			return a.(SlidingWindowLog).reset(st.(*slidingLogState), now)
		},
	},
	{
		name: "sliding-counter",
		family: windowFamily(func(l int64, w time.Duration) Scripted {
			return SlidingWindowCounter{Limit: l, Window: w}
		}),
		limit: func(a Scripted) int64 { return a.(SlidingWindowCounter).Limit },
		scale: func(a Scripted) int64 { return micros(a.(SlidingWindowCounter).Window) },
		snap:  func(st State) any { return *st.(*slidingCounterState) },
		stored: func(h map[string]string, _ []string) (any, error) {
			if len(h) == 0 {
				return slidingCounterState{}, nil
			}
			v, err := parseInts(h, "win", "curr", "prev")
			if err != nil {
				return nil, err
			}
			return slidingCounterState{valid: true, win: v[0], curr: v[1], prev: v[2]}, nil
		},
		reset: func(a Scripted, st State, now int64) int64 {
			s := st.(*slidingCounterState)
			if !s.valid {
				return 0
			}
			return a.(SlidingWindowCounter).reset(s.win, s.curr, s.prev, now)
		},
	},
	{
		name:   "token-bucket",
		family: rateFamily(func(r float64, b int64) Scripted { return TokenBucket{Rate: r, Burst: b} }),
		limit:  func(a Scripted) int64 { return a.(TokenBucket).Burst },
		scale:  func(a Scripted) int64 { c := a.(TokenBucket); return rateScale(c.Rate, c.Burst) },
		snap: func(st State) any {
			s := st.(*tokenBucketState)
			return rateSnap{valid: s.valid(), x: math.Float64bits(s.tokens), last: s.last, act: s.act, rb: s.rb(), rate: math.Float64bits(s.rate())}
		},
		stored: func(h map[string]string, _ []string) (any, error) { return parseRate(h, "tokens", true) },
		reset: func(a Scripted, st State, now int64) int64 {
			s := st.(*tokenBucketState)
			if !s.valid() {
				return 0
			}
			// Counted from the caller's now, which may be behind the state's last.
			return max(0, s.last-now) + a.(TokenBucket).untilFullFrom(s, s.last, a.(TokenBucket).Rate)
		},
	},
	{
		name:   "leaky-bucket",
		family: rateFamily(func(r float64, c int64) Scripted { return LeakyBucket{Rate: r, Capacity: c} }),
		limit:  func(a Scripted) int64 { return a.(LeakyBucket).Capacity },
		scale:  func(a Scripted) int64 { c := a.(LeakyBucket); return rateScale(c.Rate, c.Capacity) },
		snap: func(st State) any {
			s := st.(*leakyBucketState)
			return rateSnap{valid: s.valid, x: math.Float64bits(s.level), last: s.last, act: s.act, rate: math.Float64bits(s.rate)}
		},
		stored: func(h map[string]string, _ []string) (any, error) { return parseRate(h, "level", true) },
		reset: func(a Scripted, st State, now int64) int64 {
			s := st.(*leakyBucketState)
			if !s.valid {
				return 0
			}
			// Counted from the caller's now, which may be behind the state's last.
			return max(0, s.last-now) + a.(LeakyBucket).untilEmptyFrom(s, s.last, a.(LeakyBucket).Rate)
		},
	},
	{
		name:   "gcra",
		family: rateFamily(func(r float64, b int64) Scripted { return GCRA{Rate: r, Burst: b} }),
		limit:  func(a Scripted) int64 { return a.(GCRA).Burst },
		scale:  func(a Scripted) int64 { c := a.(GCRA); return rateScale(c.Rate, c.Burst) },
		snap: func(st State) any {
			s := st.(*gcraState)
			return rateSnap{valid: s.valid, x: math.Float64bits(s.tat), act: s.act, iv: math.Float64bits(s.iv), rb: s.rb, last: s.last, burst: s.burst}
		},
		stored: func(h map[string]string, _ []string) (any, error) { return parseRate(h, "tat", false) },
		reset: func(_ Scripted, st State, now int64) int64 {
			s := st.(*gcraState)
			if !s.valid {
				return 0
			}
			return ceilMicros(s.tat - float64(now))
		},
	},
}
