package storetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/semstate"
	"github.com/ratekit/limiter/store"
)

// SemaphoreFactory makes a fresh, empty store.SemaphoreStore whose notion of now is clk,
// for example a store from local.New(local.WithClock(clk)). RunSemaphore calls it from parallel
// subtests, so the stores must be isolated from each other (a fresh prefix on a shared
// Redis). A store that has a Close() error method is closed when its test ends.
type SemaphoreFactory func(t *testing.T, clk *clockx.Fake) store.SemaphoreStore

// semEpoch is where the suite's fake clocks start (2026-01-01T00:00:00Z).
var semEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// RunSemaphore runs the semaphore conformance suite against stores made by newStore, only
// through the SemaphoreStore interface and the fake clock (it never sleeps):
//
//   - exact tables: grants up to Permits, RetryAfter, lease expiry at LeaseTTL to the µs,
//     Renew keeping a long holder, Release and Renew by a wrong token refused, re-acquire
//     by a holder taking nothing more, time going backwards, fair grants in ticket order,
//     a dead waiter's place expiring, giving up a place, tries that do not queue;
//   - a differential run with fixed seeds against the Go reference (internal/semstate)
//     (for the Redis store this checks the Lua twin against the Go transition);
//   - bad input, unusual names that never share state, Close, calls on a done context
//     (its error, not store.ErrUnavailable, and no change);
//   - goroutines taking and giving back permits never hold more than Permits at once.
func RunSemaphore(t *testing.T, newStore SemaphoreFactory) {
	t.Helper()
	t.Run("Tables", func(t *testing.T) { t.Parallel(); runSemTables(t, newStore) })
	t.Run("Reference", func(t *testing.T) { t.Parallel(); runSemReference(t, newStore) })
	t.Run("BadInput", func(t *testing.T) { t.Parallel(); runSemBadInput(t, newStore) })
	t.Run("Names", func(t *testing.T) { t.Parallel(); runSemNames(t, newStore) })
	t.Run("Concurrency", func(t *testing.T) { t.Parallel(); runSemConcurrency(t, newStore) })
	t.Run("Close", func(t *testing.T) { t.Parallel(); runSemClose(t, newStore) })
	t.Run("Context", func(t *testing.T) { t.Parallel(); runSemContext(t, newStore) })
}

// semHarness is one semaphore store under test with its fake clock.
type semHarness struct {
	t   testing.TB
	s   store.SemaphoreStore
	clk *clockx.Fake
	ctx context.Context
}

func newSemHarness(t *testing.T, f SemaphoreFactory) *semHarness {
	t.Helper()
	clk := clockx.NewFake(semEpoch)
	s := f(t, clk)
	if s == nil {
		t.Fatal("storetest: the SemaphoreFactory returned a nil store")
	}
	if c, ok := s.(io.Closer); ok {
		t.Cleanup(func() { _ = c.Close() })
	}
	return &semHarness{t: t, s: s, clk: clk, ctx: context.Background()}
}

// semStep is one call at semEpoch+at: op is "acquire", "release", "renew" or "holders".
type semStep struct {
	at    time.Duration
	op    string
	token string
	qttl  time.Duration
	want  any // algo.SemaphoreResult, bool or int64
}

// do runs one call on name under cfg and returns its answer, failing on an error.
func (h *semHarness) do(name string, cfg algo.Semaphore, s semStep) any {
	h.t.Helper()
	var got any
	var err error
	switch s.op {
	case "acquire":
		got, err = h.s.Acquire(h.ctx, name, cfg, s.token, s.qttl)
	case "release":
		got, err = h.s.Release(h.ctx, name, s.token)
	case "renew":
		got, err = h.s.Renew(h.ctx, name, cfg, s.token)
	default:
		got, err = h.s.Holders(h.ctx, name)
	}
	if err != nil {
		h.t.Fatalf("%s(%q, %q) at %v: unexpected error: %v", s.op, name, s.token, s.at, err)
	}
	return got
}

// runSemReference drives the store and semstate.State with one seeded random
// sequence of calls on a few names and tokens, with time moving forwards and backwards,
// and requires the same answer to every call.
func runSemReference(t *testing.T, f SemaphoreFactory) {
	for seed := int64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel()
			h := newSemHarness(t, f)
			r := rand.New(rand.NewSource(seed))
			cfgs := []algo.Semaphore{
				{Permits: 1 + r.Int63n(3), LeaseTTL: time.Duration(1+r.Intn(40)) * time.Millisecond, Fair: true},
				{Permits: 1 + r.Int63n(3), LeaseTTL: time.Duration(1+r.Intn(40)) * time.Millisecond},
			}
			names := []string{"fair", "plain"}
			ref := []*semstate.State{semstate.New(), semstate.New()}
			steps := 600
			if testing.Short() {
				steps = 150
			}
			for i := 0; i < steps; i++ {
				switch k := r.Intn(10); {
				case k < 6:
					h.clk.Add(time.Duration(r.Intn(8000)) * time.Microsecond)
				case k < 7:
					h.clk.Add(-time.Duration(r.Intn(15000)) * time.Microsecond)
				}
				now := h.clk.Now().UnixMicro()
				j := r.Intn(2)
				cfg, st := cfgs[j], ref[j]
				s := semStep{token: fmt.Sprint("t", r.Intn(6))}
				var want any
				switch r.Intn(6) {
				case 0, 1, 2:
					s.op, s.qttl = "acquire", time.Duration(r.Intn(25))*time.Millisecond
					want = st.Acquire(cfg, now, s.token, s.qttl)
				case 3:
					s.op, want = "release", st.Release(now, s.token)
				case 4:
					s.op, want = "renew", st.Renew(cfg, now, s.token)
				default:
					s.op, s.token, want = "holders", "", st.Holders(now)
				}
				if got := h.do(names[j], cfg, s); got != want {
					t.Fatalf("seed %d, step %d, %+v: %s(%q, queue %v) at %s = %+v, the reference says %+v",
						seed, i, cfg, s.op, s.token, s.qttl, h.clk.Now().Format(time.RFC3339Nano), got, want)
				}
			}
		})
	}
}

func runSemBadInput(t *testing.T, f SemaphoreFactory) {
	h := newSemHarness(t, f)
	ctx := h.ctx
	good := algo.Semaphore{Permits: 1, LeaseTTL: time.Second}
	check := func(what string, err, want error) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Errorf("%s: err = %v, want an error wrapping %v", what, err, want)
		}
	}
	_, err := h.s.Acquire(ctx, "", good, "t", 0)
	check("Acquire with an empty name", err, store.ErrInvalidKey)
	_, err = h.s.Acquire(ctx, "n", good, "", 0)
	check("Acquire with an empty token", err, algo.ErrInvalidRequest)
	for _, bad := range []algo.Semaphore{{Permits: 0, LeaseTTL: time.Second}, {Permits: 1}, {Permits: 1, LeaseTTL: time.Second + 1}} {
		_, err = h.s.Acquire(ctx, "n", bad, "t", 0)
		check(fmt.Sprintf("Acquire with %+v", bad), err, algo.ErrInvalidConfig)
		_, err = h.s.Renew(ctx, "n", bad, "t")
		check(fmt.Sprintf("Renew with %+v", bad), err, algo.ErrInvalidConfig)
	}
	_, err = h.s.Release(ctx, "", "t")
	check("Release with an empty name", err, store.ErrInvalidKey)
	_, err = h.s.Release(ctx, "n", "")
	check("Release with an empty token", err, algo.ErrInvalidRequest)
	_, err = h.s.Renew(ctx, "", good, "t")
	check("Renew with an empty name", err, store.ErrInvalidKey)
	_, err = h.s.Renew(ctx, "n", good, "")
	check("Renew with an empty token", err, algo.ErrInvalidRequest)
	_, err = h.s.Holders(ctx, "")
	check("Holders with an empty name", err, store.ErrInvalidKey)
	// Nothing of the above took a permit.
	if got := h.do("n", good, semStep{op: "holders"}); got != int64(0) {
		t.Errorf("Holders after bad calls = %v, want 0", got)
	}
	if got := h.do("n", good, semGrant(0, "t", 0, 1)); got != (algo.SemaphoreResult{Acquired: true, Holders: 1}) {
		t.Errorf("Acquire after bad calls = %+v, want granted", got)
	}
}

// semNames are names that a careless key scheme would mix up.
func semNames() []string {
	return []string{"a", "A", "a:b", "a}", "{a}", "}{", "{", "}", "%7B", "%", " ", "\x00", "a\x00b",
		"ключ", "🔑", string(make([]byte, 10_000))}
}

// runSemNames fills a one-permit semaphore under every name, then checks that each still
// has exactly one holder (names never share state) and can be released.
func runSemNames(t *testing.T, f SemaphoreFactory) {
	h := newSemHarness(t, f)
	cfg := algo.Semaphore{Permits: 1, LeaseTTL: time.Minute, Fair: true}
	names := semNames()
	for i, n := range names {
		if got := h.do(n, cfg, semGrant(0, fmt.Sprint("owner", i), time.Minute, 1)); got != (algo.SemaphoreResult{Acquired: true, Holders: 1}) {
			t.Fatalf("name %q: first Acquire = %+v, want granted", n, got)
		}
		if got := h.do(n, cfg, semStep{op: "acquire", token: "other", qttl: time.Minute}); got.(algo.SemaphoreResult).Acquired {
			t.Fatalf("name %q: a second holder was granted", n)
		}
	}
	for i, n := range names {
		if got := h.do(n, cfg, semStep{op: "holders"}); got != int64(1) {
			t.Errorf("name %q: Holders = %v, want 1", n, got)
		}
		if got := h.do(n, cfg, semRelease(0, fmt.Sprint("owner", i), true)); got != true {
			t.Errorf("name %q: Release by its owner = %v, want true", n, got)
		}
		// "other" was queued first, so it is next.
		if got := h.do(n, cfg, semStep{op: "acquire", token: "other", qttl: time.Minute}); got != (algo.SemaphoreResult{Acquired: true, Holders: 1}) {
			t.Errorf("name %q: the queued waiter got %+v, want granted", n, got)
		}
	}
}

// runSemConcurrency has goroutines take and give back permits of one semaphore with the
// clock frozen (no lease expires): the number of holders never exceeds Permits, every
// grant is released exactly once, and in fair mode every waiter is eventually served.
func runSemConcurrency(t *testing.T, f SemaphoreFactory) {
	const goroutines, rounds, permits = 8, 15, 3
	for _, fair := range []bool{false, true} {
		t.Run(fmt.Sprint("fair=", fair), func(t *testing.T) {
			t.Parallel()
			h := newSemHarness(t, f)
			cfg := algo.Semaphore{Permits: permits, LeaseTTL: time.Hour, Fair: fair}
			var inUse, peak, grants atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, goroutines)
			for g := 0; g < goroutines; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- semWorker(h, cfg, g, rounds, &inUse, &peak, &grants)
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			if got, want := grants.Load(), int64(goroutines*rounds); got != want {
				t.Errorf("%d grants, want %d", got, want)
			}
			if p := peak.Load(); p > permits {
				t.Errorf("peak of %d holders > Permits %d", p, permits)
			}
			if n := h.do("hot", cfg, semStep{op: "holders"}); n != int64(0) {
				t.Errorf("Holders after every release = %v, want 0", n)
			}
		})
	}
}

// semWorker acquires the semaphore rounds times, spinning on denials (the clock is
// frozen; a fair waiter keeps its place), and releases each grant.
func semWorker(h *semHarness, cfg algo.Semaphore, g, rounds int, inUse, peak, grants *atomic.Int64) error {
	for i := 0; i < rounds; i++ {
		token := fmt.Sprintf("g%d-%d", g, i)
		for tries := 0; ; tries++ {
			r, err := h.s.Acquire(h.ctx, "hot", cfg, token, time.Hour)
			if err != nil {
				return err
			}
			if r.Acquired {
				break
			}
			if tries > 100_000 {
				return fmt.Errorf("%s never granted", token)
			}
		}
		grants.Add(1)
		n := inUse.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		if n > cfg.Permits {
			return fmt.Errorf("%d holders at once, Permits %d", n, cfg.Permits)
		}
		held, err := h.s.Holders(h.ctx, "hot")
		if err != nil {
			return err
		}
		if held > cfg.Permits || held < 1 {
			return fmt.Errorf("Holders = %d while holding, want in [1, %d]", held, cfg.Permits)
		}
		inUse.Add(-1)
		ok, err := h.s.Release(h.ctx, "hot", token)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("Release(%s) = false for a live lease", token)
		}
	}
	return nil
}

// runSemClose checks, for a store with a Close method, that calls after Close fail with
// store.ErrClosed.
func runSemClose(t *testing.T, f SemaphoreFactory) {
	h := newSemHarness(t, f)
	c, ok := h.s.(io.Closer)
	if !ok {
		t.Skip("the store has no Close method")
	}
	cfg := algo.Semaphore{Permits: 1, LeaseTTL: time.Second}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, err := h.s.Acquire(h.ctx, "n", cfg, "t", 0)
	if !errors.Is(err, store.ErrClosed) {
		t.Errorf("Acquire after Close: err = %v, want ErrClosed", err)
	}
	_, err = h.s.Release(h.ctx, "n", "t")
	if !errors.Is(err, store.ErrClosed) {
		t.Errorf("Release after Close: err = %v, want ErrClosed", err)
	}
	_, err = h.s.Renew(h.ctx, "n", cfg, "t")
	if !errors.Is(err, store.ErrClosed) {
		t.Errorf("Renew after Close: err = %v, want ErrClosed", err)
	}
	_, err = h.s.Holders(h.ctx, "n")
	if !errors.Is(err, store.ErrClosed) {
		t.Errorf("Holders after Close: err = %v, want ErrClosed", err)
	}
}
