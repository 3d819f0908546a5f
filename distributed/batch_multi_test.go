package distributed_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/store"
)

// multiCalls counts the multi commands sent and the calls they carried.
type multiCalls struct {
	multi          string // the multi function's name (multiFunction)
	groups, inside atomic.Int64
}

// note counts cmd if it is a multi command (see eachCmd).
func (h *multiCalls) note(cmd redis.Cmder) {
	if a := cmd.Args(); len(a) > 2 && a[0] == "fcall" && a[1] == h.multi {
		h.groups.Add(1)
		h.inside.Add(int64(a[2].(int)))
	}
}

// burstOf runs calls Allow calls in each of goroutines goroutines at once (the i-th call of
// goroutine g on keys[(g+i) mod len(keys)]) and returns the grants per key and the errors.
func burstOf(t *testing.T, s *distributed.Store, a algo.Algorithm, keys []string, goroutines, calls int) (map[string]int, []error) {
	t.Helper()
	ctx := ctxTimeout(t, 30*time.Second)
	var mu sync.Mutex
	granted := map[string]int{}
	var errs []error
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < calls; i++ {
				key := keys[(g+i)%len(keys)]
				d, err := s.Apply(ctx, key, a, algo.Request{N: 1})
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", key, err))
				} else if d.Allowed {
					granted[key]++
				}
				mu.Unlock()
			}
		}(g)
	}
	wg.Wait()
	return granted, errs
}

// grantsEach runs a burst of 32 goroutines × 20 Allow calls over keys and checks that each
// key granted want, with no error.
func grantsEach(t *testing.T, s *distributed.Store, a algo.Algorithm, keys []string, want int) {
	t.Helper()
	granted, errs := burstOf(t, s, a, keys, 32, 20)
	if len(errs) > 0 {
		t.Fatalf("%d errors, the first %v", len(errs), errs[0])
	}
	for _, k := range keys {
		if granted[k] != want {
			t.Errorf("key %s: %d granted, want %d (%v)", k, granted[k], want, granted)
		}
	}
}

// TestBatchGroups: concurrent Allow calls on one server go as groups (the multi function),
// and grant exactly what the quota allows: a token bucket of 7 that does not refill grants
// 7 per key, whatever the grouping.
func TestBatchGroups(t *testing.T) {
	t.Parallel()
	a := algo.TokenBucket{Rate: 1e-9, Burst: 7}
	c := redistest.Start(t).Client(t)
	h := &multiCalls{multi: multiFunction(a)}
	c.AddHook(eachCmd(h.note))
	s := newStore(t, c)
	keys := []string{"a", "b", "c", "d", "e"}
	grantsEach(t, s, a, keys, 7)
	if h.groups.Load() == 0 {
		t.Errorf("no group was sent (%d calls)", 32*20)
	}
	t.Logf("%d groups carried %d of %d calls", h.groups.Load(), h.inside.Load(), 32*20)
}

// TestBatchGroupErrorStaysItsOwn: a call on a key that holds another type fails alone; the
// calls grouped with it are decided.
func TestBatchGroupErrorStaysItsOwn(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t).Client(t)
	if err := c.RPush(ctxTimeout(t, 30*time.Second), "bench:{bad}:tb", "x").Err(); err != nil {
		t.Fatal(err)
	}
	groupWithBadKey(t, c, "bench:", func(err error) {
		if !strings.Contains(err.Error(), "WRONGTYPE") {
			t.Fatalf("error %v, want WRONGTYPE", err)
		}
	})
}

// TestBatchGroupScriptErrorIsTheKeys (issue 35, seam 4): a corrupt state on one key (a
// hash of the previous format whose fields are not numbers) makes its script raise a Lua
// error. Grouped with healthy calls, that call must fail as it fails alone: an error
// wrapping store.ErrKeyUnavailable (Redis answered; the breaker does not count it), with
// the script's text, never an outage. The calls grouped with it are decided.
func TestBatchGroupScriptErrorIsTheKeys(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t).Client(t)
	ctx := ctxTimeout(t, 30*time.Second)
	if err := c.HSet(ctx, "corrupt:{bad}:tb", "tokens", "x", "last", "y").Err(); err != nil {
		t.Fatal(err)
	}
	alone := newStore(t, c, distributed.WithPrefix("corrupt:"), distributed.WithBatching(distributed.Batching{Off: true}))
	_, aloneErr := alone.Apply(ctx, "bad", algo.TokenBucket{Rate: 1e-9, Burst: 1000}, algo.Request{N: 1})
	if !errors.Is(aloneErr, store.ErrKeyUnavailable) {
		t.Fatalf("alone: error %v, want one wrapping store.ErrKeyUnavailable", aloneErr)
	}
	groupWithBadKey(t, c, "corrupt:", func(err error) {
		if !errors.Is(err, store.ErrKeyUnavailable) {
			t.Fatalf("batched: error %v, want one wrapping store.ErrKeyUnavailable, as alone (%v)", err, aloneErr)
		}
		if !strings.Contains(err.Error(), "script") {
			t.Fatalf("batched: error %v does not carry the script's text, as alone (%v)", err, aloneErr)
		}
	})
}

// groupWithBadKey runs bursts of token-bucket calls under prefix on the key "bad" (which
// the caller has spoiled) and three good keys until a group was sent: the good keys grant
// every call, and each call on the bad key fails with an error that check accepts.
func groupWithBadKey(t *testing.T, c redis.UniversalClient, prefix string, check func(error)) {
	t.Helper()
	a := algo.TokenBucket{Rate: 1e-9, Burst: 1000}
	h := &multiCalls{multi: multiFunction(a)}
	c.AddHook(eachCmd(h.note))
	s := newStore(t, c, distributed.WithPrefix(prefix))
	for round := 0; round < 20 && h.groups.Load() == 0; round++ {
		granted, errs := burstOf(t, s, a, []string{"bad", "g1", "g2", "g3"}, 16, 4)
		if got := granted["g1"] + granted["g2"] + granted["g3"]; got != 48 {
			t.Fatalf("the good keys granted %d of 48 (%v), errors %v", got, granted, errs)
		}
		if len(errs) != 16 {
			t.Fatalf("%d errors, want the 16 calls on the bad key: %v", len(errs), errs)
		}
		for _, err := range errs {
			check(err)
		}
	}
	if h.groups.Load() == 0 {
		t.Error("no group was sent")
	}
}

// multiFunction is the name of the multi function the store sends for a's script.
func multiFunction(a algo.Scripted) string {
	_, _, multi := distributed.FunctionNames(a.Script())
	return multi
}

// TestBatchChargeGroups: concurrent charges at the server's TIME on one server go as
// groups of the charge-multi function, each with its own N, and record exactly what was
// charged: a token bucket of 1000 that does not refill, charged 1..3 by 32 goroutines × 20
// calls over 5 keys (about 256 each), holds 1000 − (its charges) tokens.
func TestBatchChargeGroups(t *testing.T) {
	t.Parallel()
	a := algo.TokenBucket{Rate: 1e-9, Burst: 1000}
	c := redistest.Start(t).Client(t)
	fn, _, _ := distributed.FunctionNames(a.Script())
	h := &multiCalls{multi: fn + "_c"} // luawire.ChargeSuffix
	c.AddHook(eachCmd(h.note))
	s := newStore(t, c)
	ctx := ctxTimeout(t, 30*time.Second)
	keys := []string{"a", "b", "c", "d", "e"}
	var mu sync.Mutex
	charged := map[string]int64{}
	var wg sync.WaitGroup
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				key, n := keys[(g+i)%len(keys)], int64(1+(g+i)%3)
				d, err := s.Apply(ctx, key, a, algo.Request{N: n, Charge: true})
				if err != nil || !d.Allowed {
					t.Errorf("charge %d on %s: %+v, %v", n, key, d, err)
					return
				}
				mu.Lock()
				charged[key] += n
				mu.Unlock()
			}
		}(g)
	}
	wg.Wait()
	if h.groups.Load() == 0 {
		t.Errorf("no charge group was sent (%d charges)", 32*20)
	}
	t.Logf("%d charge groups carried %d of %d charges", h.groups.Load(), h.inside.Load(), 32*20)
	for _, k := range keys {
		// What is left: a peek of one permit says Remaining; in debt, 0 and RetryAfter.
		d, err := s.Peek(ctx, k, a, algo.Request{N: 1})
		if err != nil {
			t.Fatal(err)
		}
		if left := 1000 - charged[k]; d.Remaining != left {
			t.Errorf("key %s charged %d of 1000: Remaining %d, want %d", k, charged[k], d.Remaining, left)
		}
	}
}
