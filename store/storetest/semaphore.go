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
	"github.com/ratekit/limiter/store"
)

// SemaphoreFactory makes a fresh, empty store.SemaphoreStore whose notion of now is clk,
// for example local.New(local.WithClock(clk)). RunSemaphore calls it from parallel
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
//   - a differential run with fixed seeds against algo.SemaphoreState, the reference
//     (for the Redis store this checks the Lua twin against the Go transition);
//   - bad input, unusual names that never share state, Close;
//   - goroutines taking and giving back permits never hold more than Permits at once.
func RunSemaphore(t *testing.T, newStore SemaphoreFactory) {
	t.Helper()
	t.Run("Tables", func(t *testing.T) { t.Parallel(); runSemTables(t, newStore) })
	t.Run("Reference", func(t *testing.T) { t.Parallel(); runSemReference(t, newStore) })
	t.Run("BadInput", func(t *testing.T) { t.Parallel(); runSemBadInput(t, newStore) })
	t.Run("Names", func(t *testing.T) { t.Parallel(); runSemNames(t, newStore) })
	t.Run("Concurrency", func(t *testing.T) { t.Parallel(); runSemConcurrency(t, newStore) })
	t.Run("Close", func(t *testing.T) { t.Parallel(); runSemClose(t, newStore) })
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

func semGrant(at time.Duration, token string, qttl time.Duration, holders int64) semStep {
	return semStep{at: at, op: "acquire", token: token, qttl: qttl,
		want: algo.SemaphoreResult{Acquired: true, Holders: holders}}
}

func semDeny(at time.Duration, token string, qttl time.Duration, holders, pos int64, retry time.Duration) semStep {
	return semStep{at: at, op: "acquire", token: token, qttl: qttl,
		want: algo.SemaphoreResult{Holders: holders, Position: pos, RetryAfter: retry}}
}

func semRelease(at time.Duration, token string, ok bool) semStep {
	return semStep{at: at, op: "release", token: token, want: ok}
}

func semRenew(at time.Duration, token string, ok bool) semStep {
	return semStep{at: at, op: "renew", token: token, want: ok}
}

func semHolders(at time.Duration, n int64) semStep {
	return semStep{at: at, op: "holders", want: n}
}

type semTable struct {
	name  string
	cfg   algo.Semaphore
	steps []semStep
}

func semTables() []semTable {
	const s, us = time.Second, time.Microsecond
	ttl, q := 10*s, 5*s
	plain := algo.Semaphore{Permits: 2, LeaseTTL: ttl}
	one := algo.Semaphore{Permits: 1, LeaseTTL: ttl}
	fair := algo.Semaphore{Permits: 2, LeaseTTL: ttl, Fair: true}
	fairOne := algo.Semaphore{Permits: 1, LeaseTTL: ttl, Fair: true}
	return []semTable{
		{"GrantsUpToPermits", plain, []semStep{
			semHolders(0, 0),
			semGrant(0, "a", 0, 1),
			semGrant(s, "b", 0, 2),
			semDeny(2*s, "c", 0, 2, 0, 8*s), // a's lease ends at 10 s
			semHolders(2*s, 2),
			semRelease(3*s, "a", true),
			semRelease(3*s, "a", false), // a second time
			semGrant(3*s, "c", 0, 2),
		}},
		{"LeaseExpiresAtLeaseTTL", one, []semStep{
			semGrant(0, "a", 0, 1),
			semDeny(ttl-us, "b", 0, 1, 0, us),
			semHolders(ttl-us, 1),
			semHolders(ttl, 0),
			semRenew(ttl, "a", false), // expired, although nobody took the permit
			semRelease(ttl, "a", false),
			semGrant(ttl, "b", 0, 1),
		}},
		{"ReacquireTakesNothingMore", plain, []semStep{
			semGrant(0, "a", 0, 1),
			semGrant(5*s, "a", 0, 1), // extends a to 15 s
			semGrant(6*s, "b", 0, 2),
			semDeny(7*s, "c", 0, 2, 0, 8*s),
		}},
		{"RenewKeepsALongHolder", one, []semStep{
			semGrant(0, "a", 0, 1),
			semRenew(9*s, "a", true),
			semRenew(18*s, "a", true),
			semRenew(27*s, "a", true),
			semDeny(36*s, "b", 0, 1, 0, s),
			semRenew(36*s, "b", false), // not a holder
			semHolders(37*s-us, 1),
			semHolders(37*s, 0),
		}},
		{"WrongTokenRefused", one, []semStep{
			semGrant(0, "a", 0, 1),
			semRelease(s, "A", false),
			semRelease(s, "a ", false),
			semRenew(s, "b", false),
			semDeny(2*s, "b", 0, 1, 0, 8*s),
			semRelease(3*s, "a", true),
		}},
		{"TimeBackwardsCreatesNothing", one, []semStep{
			semGrant(100*s, "a", 0, 1),
			semDeny(50*s, "b", 0, 1, 0, 60*s),
			semRenew(50*s, "a", true), // never shortens the lease
			semDeny(100*s, "b", 0, 1, 0, ttl),
		}},
		{"FairTicketOrder", fair, []semStep{
			semGrant(0, "a", q, 1),
			semGrant(0, "b", q, 2),
			semDeny(s, "c", q, 2, 0, 9*s), // first ticket
			semDeny(s, "d", q, 2, 1, 9*s), // second ticket
			semDeny(s, "e", 0, 2, 2, 9*s), // a try: behind both, not queued
			semRelease(2*s, "a", true),
			semDeny(2*s, "d", q, 1, 1, 8*s), // c comes first
			semDeny(2*s, "e", 0, 1, 2, 8*s), // and a try never overtakes a waiter
			semGrant(3*s, "c", q, 2),
			semDeny(3*s, "d", q, 2, 0, 7*s), // d is next in line now
			semRelease(4*s, "b", true),
			semGrant(4*s, "d", q, 2),
		}},
		{"DeadWaiterPlaceExpires", fairOne, []semStep{
			semGrant(0, "a", q, 1),
			semDeny(s, "dead", q, 1, 0, 9*s), // its place lasts until 6 s
			semDeny(2*s, "b", q, 1, 1, 8*s),
			semRelease(3*s, "a", true),
			semDeny(4*s, "b", q, 0, 1, 0), // the silent waiter still holds its place
			semDeny(6*s-us, "b", q, 0, 1, 0),
			semGrant(6*s, "b", q, 1),
		}},
		{"LiveWaiterKeepsItsPlace", fairOne, []semStep{
			semGrant(0, "a", q, 1),
			semDeny(s, "w", q, 1, 0, 9*s),
			semDeny(5*s, "w", q, 1, 0, 5*s), // refreshed until 10 s
			semDeny(9*s, "w", q, 1, 0, s),   // until 14 s
			semDeny(12*s, "x", q, 0, 1, 0),  // a's lease has ended, but w is first
			semGrant(12*s, "w", q, 1),
			semDeny(13*s, "x", q, 1, 0, 9*s),
		}},
		{"ReleaseLeavesTheQueue", fairOne, []semStep{
			semGrant(0, "a", q, 1),
			semDeny(s, "w", q, 1, 0, 9*s),
			semDeny(s, "x", q, 1, 1, 9*s),
			semRelease(2*s, "w", false), // w gives up: it held nothing
			semRelease(3*s, "a", true),
			semGrant(3*s, "x", q, 1),
		}},
		{"TryDropsAnOldPlace", fairOne, []semStep{
			semGrant(0, "a", q, 1),
			semDeny(s, "w", q, 1, 0, 9*s),
			semDeny(s, "x", q, 1, 1, 9*s),
			semDeny(2*s, "w", 0, 1, 0, 8*s), // w now only tries: it leaves the queue
			semDeny(2*s, "x", q, 1, 0, 8*s),
		}},
		{"NonFairGrantsWhoeverAsks", one, []semStep{
			semGrant(0, "a", q, 1),
			semDeny(s, "w", q, 1, 0, 9*s),
			semRelease(2*s, "a", true),
			semGrant(2*s, "x", q, 1),
		}},
	}
}

func runSemTables(t *testing.T, f SemaphoreFactory) {
	for _, tc := range semTables() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newSemHarness(t, f)
			for i, s := range tc.steps {
				h.clk.Set(semEpoch.Add(s.at))
				if got := h.do("sem", tc.cfg, s); got != s.want {
					t.Fatalf("%+v step %d: %s(%q, queue %v) at +%v = %+v, want %+v",
						tc.cfg, i, s.op, s.token, s.qttl, s.at, got, s.want)
				}
			}
		})
	}
}

// runSemReference drives the store and algo.SemaphoreState with one seeded random
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
			ref := []*algo.SemaphoreState{algo.NewSemaphoreState(), algo.NewSemaphoreState()}
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
				now := clockx.Micros(h.clk.Now())
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
