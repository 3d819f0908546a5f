package distributed_test

import (
	"context"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
)

// The composite limiter (limiter.All) over the Redis store: rules on one key go through
// ApplyAll, one script; rules on other keys are refunded.

func newRule(t *testing.T, s *distributed.Store, clk *clockx.Fake, a algo.Algorithm, opts ...limiter.Option) *limiter.Limiter {
	t.Helper()
	l, err := limiter.New(s, a, append([]limiter.Option{limiter.WithClock(clk)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func newAll(t *testing.T, rules ...*limiter.Limiter) *limiter.Limiter {
	t.Helper()
	l, err := limiter.All(rules...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func allow(t *testing.T, l *limiter.Limiter, key string, n int64) limiter.Decision {
	t.Helper()
	d, err := l.AllowN(context.Background(), key, n)
	if err != nil {
		t.Fatalf("AllowN(%q, %d): %v", key, n, err)
	}
	return d
}

// TestAllOnRedis drives "10 per second AND 3 per 100 ms" on one key through limiter.All:
// no window of either rule ever holds more than its limit, each call is one EVALSHA, and
// RetryAfter is the largest of the denying rules'.
func TestAllOnRedis(t *testing.T) {
	t.Parallel()
	c := redistest.WithoutExpiry(redistest.Start(t).Client(t))
	hook := &countCmds{n: map[string]int{}}
	c.AddHook(hook)
	clk := fakeClock()
	s := newStore(t, c, distributed.WithClientClock(clk))
	long := algo.FixedWindow{Limit: 10, Window: time.Second}
	short := algo.FixedWindow{Limit: 3, Window: 100 * time.Millisecond}
	all := newAll(t, newRule(t, s, clk, long), newRule(t, s, clk, short))

	const seed = 17
	rng := rand.New(rand.NewPCG(seed, 0))
	perLong, perShort := map[int64]int64{}, map[int64]int64{}
	granted := int64(0)
	const calls = 1500
	for i := 0; i < calls; i++ {
		if i == 1 {
			hook.take() // the first call loaded the composite script
		}
		clk.Add(time.Duration(rng.IntN(40_000)) * time.Microsecond)
		n := int64(1 + rng.IntN(2))
		d := allow(t, all, "k", n)
		if !d.Allowed {
			if d.RetryAfter <= 0 {
				t.Fatalf("seed %d step %d: denial %+v without RetryAfter", seed, i, d)
			}
			continue
		}
		us := clk.Now().UnixMicro()
		perLong[us/1_000_000] += n
		perShort[us/100_000] += n
		granted += n
	}
	for w, n := range perLong {
		if n > 10 {
			t.Fatalf("seed %d: second %d holds %d, limit 10", seed, w, n)
		}
	}
	for w, n := range perShort {
		if n > 3 {
			t.Fatalf("seed %d: 100 ms window %d holds %d, limit 3", seed, w, n)
		}
	}
	if granted < 250 {
		t.Errorf("seed %d: only %d granted", seed, granted)
	}
	if got, want := hook.take(), map[string]int{"fcall": calls - 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("%d composite decisions sent %v, want %v: one script per decision", calls-1, got, want)
	}

	// Fill both windows of a fresh second: the short one denies until its window ends, the
	// long one until the second ends; RetryAfter is the later.
	clk.Set(epoch.Add(time.Hour))
	allow(t, all, "r", 3)
	clk.Add(100 * time.Millisecond)
	allow(t, all, "r", 3)
	clk.Add(100 * time.Millisecond)
	allow(t, all, "r", 3)
	clk.Add(100 * time.Millisecond)
	allow(t, all, "r", 1) // the second holds 10
	d := allow(t, all, "r", 3)
	if d.Allowed || d.RetryAfter != 700*time.Millisecond {
		t.Errorf("both rules full: %+v, want RetryAfter 700ms (the second's end, not the 100 ms window's)", d)
	}
}

// TestAllOnRedisRefund: per user AND per item with key functions, on one Redis store:
// different keys, so refund semantics. A denied request leaves the user's window as a
// control user's that never sent it.
func TestAllOnRedisRefund(t *testing.T) {
	t.Parallel()
	c := redistest.WithoutExpiry(redistest.Start(t).Client(t))
	clk := fakeClock()
	s := newStore(t, c, distributed.WithClientClock(clk))
	userOf := func(k string) string { u, _, _ := strings.Cut(k, "|"); return "user:" + u }
	itemOf := func(k string) string { _, i, _ := strings.Cut(k, "|"); return "item:" + i }
	perUser := newRule(t, s, clk, algo.SlidingWindowLog{Limit: 4, Window: time.Second}, limiter.WithKeyFunc(userOf))
	perItem := newRule(t, s, clk, algo.FixedWindow{Limit: 2, Window: time.Second}, limiter.WithKeyFunc(itemOf))
	all := newAll(t, perUser, perItem)
	const seed = 23
	rng := rand.New(rand.NewPCG(seed, 0))
	denials := 0
	for i := 0; i < 600; i++ {
		clk.Add(time.Duration(rng.IntN(150_000)) * time.Microsecond)
		item := []string{"a", "b", "c"}[rng.IntN(3)]
		if d := allow(t, all, "probed|"+item, 1); !d.Allowed {
			denials++
			continue
		}
		allow(t, perUser, "control|", 1)
	}
	if denials < 50 {
		t.Errorf("seed %d: %d denials", seed, denials)
	}
	for i := 0; i < 50; i++ {
		clk.Add(time.Duration(rng.IntN(100_000)) * time.Microsecond)
		if a, b := allow(t, perUser, "probed|", 1), allow(t, perUser, "control|", 1); a != b {
			t.Fatalf("seed %d future %d: probed user %+v, control user %+v", seed, i, a, b)
		}
	}
}

// TestAllOnRedisConcurrent: goroutines hammering a composite on one key at a frozen
// instant admit exactly the tighter bound: the script is atomic.
func TestAllOnRedisConcurrent(t *testing.T) {
	t.Parallel()
	c := redistest.WithoutExpiry(redistest.Start(t).Client(t))
	clk := fakeClock()
	s := newStore(t, c, distributed.WithClientClock(clk))
	loose := newRule(t, s, clk, algo.TokenBucket{Rate: 1, Burst: 60})
	all := newAll(t, loose,
		newRule(t, s, clk, algo.Named(algo.TokenBucket{Rate: 1, Burst: 37}, "tight")),
		newRule(t, s, clk, algo.GCRA{Rate: 1, Burst: 50}))
	var granted atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 8; i++ {
				d, err := all.Allow(context.Background(), "hot")
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					granted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if got := granted.Load(); got != 37 {
		t.Errorf("%d of 128 calls granted, want exactly 37", got)
	}
	if d := allow(t, loose, "hot", 23); !d.Allowed || d.Remaining != 0 {
		t.Errorf("loose bucket: %+v, want exactly 23 left", d)
	}
}
