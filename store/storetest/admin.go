package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/store"
)

// admin returns h's store as a store.Admin, or skips t when it is not one: the admin
// operations are optional.
func (h *harness) admin(t *testing.T) store.Admin {
	t.Helper()
	ad, ok := h.s.(store.Admin)
	if !ok {
		t.Skipf("%T does not implement store.Admin", h.s)
	}
	return ad
}

// peek calls Peek and fails the test on an error.
func (h *harness) peek(key string, a algo.Algorithm, req algo.Request) algo.Decision {
	h.t.Helper()
	d, err := h.s.(store.Admin).Peek(h.ctx, key, a, req)
	if err != nil {
		h.t.Fatalf("Peek(%q, %v, %s) at %s: unexpected error: %v", key, a, reqString(req), h.clk.Now().Format(time.RFC3339Nano), err)
	}
	return d
}

// reset calls Reset and fails the test on an error.
func (h *harness) reset(key string, rules ...algo.Algorithm) {
	h.t.Helper()
	if err := h.s.(store.Admin).Reset(h.ctx, key, rules...); err != nil {
		h.t.Fatalf("Reset(%q, %v): unexpected error: %v", key, rules, err)
	}
}

// runAdmin checks store.Admin, when the store implements it (else the part is skipped).
func runAdmin(t *testing.T, f Factory) {
	t.Run("Model", func(t *testing.T) {
		t.Parallel()
		for i, a := range algo.Samples() {
			t.Run(fmt.Sprintf("%d:%v", i, a), func(t *testing.T) {
				t.Parallel()
				runAdminModel(t, f, a, int64(7000+i), scaled(400))
			})
		}
	})
	t.Run("Slots", func(t *testing.T) { t.Parallel(); runAdminSlots(t, f) })
	t.Run("BadInput", func(t *testing.T) { t.Parallel(); runAdminBadInput(t, f) })
}

// runAdminModel plays a random sequence of Apply, Refund, Peek and Reset on one key,
// "used", and the same sequence without the peeks on a twin key whose name changes at
// every Reset (a key never seen before), moving the clock (backwards too) in between. The
// two must decide alike at every step: so a Peek changes nothing that any later decision
// can see, and a Reset leaves the key exactly as a new one (but for the refunds of grants
// acting before it, which it drops: see store.Admin.Reset). Each Peek is also checked
// against the Apply that follows it at the same instant: a peek is what Apply answers,
// except that its Remaining is what is available before the request (so a request for it
// is granted at once, and a denial reports no more), the same whatever the request.
func runAdminModel(t *testing.T, f Factory, a algo.Algorithm, seed int64, steps int) {
	h := newHarness(t, f, startFor(seed))
	h.admin(t)
	g := newGen(seed, a, true)
	used, resets := "used", 0
	twin := func() string { return fmt.Sprintf("twin-%d", resets) }
	type grant struct{ n, at int64 }
	var grants []grant
	var resetAt int64 // the instant (µs) of the last Reset
	for i := 0; i < steps; i++ {
		h.clk.Add(g.step())
		where := func() string {
			return fmt.Sprintf("%v, seed %d, step %d at %d µs", a, seed, i, h.now())
		}
		switch p := g.r.Intn(100); {
		case p < 5:
			h.reset(used, a)
			resets++
			grants, resetAt = grants[:0], h.now()
		case p < 10 && len(grants) > 0:
			gr := grants[g.r.Intn(len(grants))]
			if gr.at < resetAt {
				// Granted after the clock stepped back past the last Reset: the reset key
				// takes it for a grant made before (store.Admin.Reset) and drops its
				// refund, which the twin, never reset, applies.
				continue
			}
			n := 1 + g.r.Int63n(gr.n)
			h.refund(used, a, n, gr.at)
			h.refund(twin(), a, n, gr.at)
		default:
			req := g.request()
			var peeked *algo.Decision
			same := false // whether the peek asked req
			if g.r.Intn(2) == 0 {
				one := algo.Request{N: 1}
				if g.r.Intn(3) == 0 {
					one = req // what the next Apply asks
				}
				pd := h.peek(used, a, one)
				if again := h.peek(used, a, one); again != pd {
					t.Fatalf("%s: two peeks %s answer %s, then %s", where(), reqString(one), describe(pd), describe(again))
				}
				if one != req {
					if pr := h.peek(used, a, req); pr.Remaining != pd.Remaining {
						t.Fatalf("%s: Peek(%s) answers %s, Peek(%s) %s: Remaining depends on the request",
							where(), reqString(one), describe(pd), reqString(req), describe(pr))
					}
				}
				peeked, same = &pd, one == req
			}
			du := h.apply(used, a, req)
			dt := h.apply(twin(), a, req)
			if du != dt {
				t.Fatalf("%s: Apply(%s) on the peeked (and %d times reset) key answers %s,\n  on a key without peeks %s",
					where(), reqString(req), resets, describe(du), describe(dt))
			}
			if peeked != nil {
				checkPeek(t, where(), *peeked, req, same, du)
			}
			if du.Allowed {
				grants = append(grants, grant{req.N, du.At})
			}
		}
	}
}

// checkPeek checks the Peek pd, made right before du, the Apply of req at the same
// instant; same tells whether pd peeked req itself (else a request for 1).
func checkPeek(t *testing.T, where string, pd algo.Decision, req algo.Request, same bool, du algo.Decision) {
	t.Helper()
	if msg := peekMismatch(pd, req, same, du); msg != "" {
		t.Fatalf("%s: %s", where, msg)
	}
}

// peekMismatch describes how the Peek pd disagrees with du, the Apply of req right after
// it at the same instant, or returns "". A peek is what Apply answers, except Remaining,
// which is what is available before the request (the same whatever the request peeked,
// so same tells whether pd peeked req): a request for it is granted at once, and a denial
// reports no more (as much, unless the denial wrote: a Penalty's offence starts a block,
// which leaves nothing).
func peekMismatch(pd algo.Decision, req algo.Request, same bool, du algo.Decision) string {
	// With a MaxWait, a shaping LeakyBucket queues a grant behind what is in it.
	if pd.Remaining >= req.N && req.MaxWait == 0 && !du.Allowed {
		return fmt.Sprintf("Peek answered %s, so %s should be granted at once; the Apply right after it %s",
			describe(pd), reqString(req), describe(du))
	}
	if !du.Allowed && pd.Remaining < du.Remaining {
		return fmt.Sprintf("Peek answered %s, the denial right after it %s: more Remaining", describe(pd), describe(du))
	}
	got := pd
	got.Remaining = du.Remaining
	if same && got != du {
		return fmt.Sprintf("Peek(%s) answered %s, the Apply right after it %s", reqString(req), describe(pd), describe(du))
	}
	return ""
}

// runAdminSlots checks that Reset forgets exactly the slots it is given, and that a Peek on
// a fresh key answers what Apply answers there.
func runAdminSlots(t *testing.T, f Factory) {
	h := newHarness(t, f, epoch)
	h.admin(t)
	tb := algo.TokenBucket{Rate: 1, Burst: 3}
	fw := algo.FixedWindow{Limit: 2, Window: time.Minute}
	log := algo.SlidingWindowLog{Limit: 2, Window: time.Minute} // a state of two Redis keys
	one := algo.Request{N: 1}
	for _, a := range []algo.Algorithm{tb, fw, log} {
		if p, d := h.peek("new", a, one), h.apply("other-new", a, one); peekMismatch(p, one, true, d) != "" || p.Remaining != p.Limit {
			t.Errorf("%v: Peek on a new key %s, Apply on another new key %s", a, describe(p), describe(d))
		}
	}
	for _, a := range []algo.Algorithm{tb, fw, log} {
		h.apply("k", a, algo.Request{N: 2})
	}
	h.reset("k", tb, log)
	if d := h.peek("k", tb, one); d.Remaining != 3 { // a full bucket of 3: what is there now
		t.Errorf("token bucket after Reset: Peek %s, want Remaining 3 (full)", describe(d))
	}
	if d := h.peek("k", log, one); d.Remaining != 2 {
		t.Errorf("sliding log after Reset: Peek %s, want Remaining 2 (empty)", describe(d))
	}
	if d := h.peek("k", fw, one); d.Allowed {
		t.Errorf("fixed window, not reset: Peek %s, want denied (2 of 2 used)", describe(d))
	}
	h.reset("k", fw, fw) // a slot named twice is forgotten once
	if d := h.apply("k", fw, algo.Request{N: 2}); !d.Allowed {
		t.Errorf("fixed window after Reset: Apply(2) %s, want allowed", describe(d))
	}
	h.reset("never-seen", tb) // nothing to forget: no error
}

// runAdminBadInput checks the errors of Peek and Reset: bad input as Apply reports it, a
// done context, and a closed store.
func runAdminBadInput(t *testing.T, f Factory) {
	h := newHarness(t, f, epoch)
	ad := h.admin(t)
	tb := algo.TokenBucket{Rate: 1, Burst: 3}
	one := algo.Request{N: 1}
	_, err := ad.Peek(h.ctx, "", tb, one)
	errorIs(t, "Peek with an empty key", err, store.ErrInvalidKey)
	_, err = ad.Peek(h.ctx, "k", tb, algo.Request{N: 0})
	errorIs(t, "Peek with N 0", err, algo.ErrInvalidRequest)
	_, err = ad.Peek(h.ctx, "k", algo.TokenBucket{Rate: math.NaN(), Burst: 1}, one)
	errorIs(t, "Peek with a NaN rate", err, algo.ErrInvalidConfig)
	_, err = ad.Peek(h.ctx, "k", nil, one)
	errorIs(t, "Peek with a nil algorithm", err, algo.ErrInvalidConfig)
	errorIs(t, "Reset with an empty key", ad.Reset(h.ctx, "", tb), store.ErrInvalidKey)
	errorIs(t, "Reset with no rules", ad.Reset(h.ctx, "k"), algo.ErrInvalidConfig)
	errorIs(t, "Reset with a nil rule", ad.Reset(h.ctx, "k", tb, nil), algo.ErrInvalidConfig)
	errorIs(t, "Reset with an invalid rule", ad.Reset(h.ctx, "k", algo.FixedWindow{}), algo.ErrInvalidConfig)

	h.apply("k", tb, algo.Request{N: 3})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = ad.Peek(ctx, "k", tb, one)
	errorIs(t, "Peek on a cancelled context", err, context.Canceled)
	if errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Peek on a cancelled context: %v wraps ErrUnavailable", err)
	}
	err = ad.Reset(ctx, "k", tb)
	errorIs(t, "Reset on a cancelled context", err, context.Canceled)
	if d := h.peek("k", tb, one); d.Allowed {
		t.Errorf("Reset on a cancelled context forgot the state: Peek %s, want denied", describe(d))
	}

	if err := h.s.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = ad.Peek(h.ctx, "k", tb, one)
	errorIs(t, "Peek after Close", err, store.ErrClosed)
	errorIs(t, "Reset after Close", ad.Reset(h.ctx, "k", tb), store.ErrClosed)
}
