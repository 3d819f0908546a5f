package storetest

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/multirules"
	"github.com/ratekit/limiter/store"
)

// Charges (algo.Request.Charge): every sample that states algo.Chargeable is checked, so
// an algorithm is covered here as soon as it states it.

// chargeable reports whether a states algo.Chargeable.
func chargeable(a algo.Algorithm) bool { return algo.CapabilitiesOf(a)&algo.Chargeable != 0 }

// chargeableSamples returns the samples that state algo.Chargeable.
func chargeableSamples() []algo.Algorithm {
	var out []algo.Algorithm
	for _, a := range algo.Samples() {
		if chargeable(a) {
			out = append(out, a)
		}
	}
	return out
}

// uncharged is a custom algorithm that states no capability at all (it never said it
// can be charged), keeping its Lua twin so that every store can run it.
type uncharged struct{ algo.Scripted }

func (uncharged) Capabilities() algo.Capability { return 0 }

// unchargedOf returns a wrapped so that it states nothing, or nil when a has no Lua twin.
func unchargedOf(a algo.Algorithm) algo.Algorithm {
	if s, ok := a.(algo.Scripted); ok {
		return uncharged{s}
	}
	return nil
}

// charge calls Apply with a Charge of n and fails the test on an error.
func (h *harness) charge(key string, a algo.Algorithm, n int64) algo.Decision {
	h.t.Helper()
	d, err := h.s.Apply(h.ctx, key, a, algo.Request{N: n, Charge: true})
	require.NoError(h.t, err, "Charge(%q, %v, %d) at %s", key, a, n, h.clk.Now().Format(time.RFC3339Nano))
	return d
}

// runChargeContracts checks what every store promises of a charge, leasing's included:
// never denied (Wait 0, Remaining ≥ 0) whatever the history, Remaining 0 and RetryAfter > 0
// for a charge past what a key holds, and a refused charge (an algorithm that does not
// state algo.Chargeable, or bad N) writes nothing.
func runChargeContracts(t *testing.T, f Factory) {
	for i, a := range chargeableSamples() {
		t.Run(fmt.Sprintf("NeverDenied/%v", a), func(t *testing.T) {
			t.Parallel()
			checkChargeNeverDenied(t, f, a, int64(9000+i), scaled(600))
		})
	}
	t.Run("Refused", func(t *testing.T) { t.Parallel(); checkChargeRefused(t, f) })
}

// checkChargeNeverDenied plays random requests and charges on two keys: every charge is
// granted with no wait, and a charge past the whole limit on a fresh key leaves it in
// debt (Remaining 0, RetryAfter > 0).
func checkChargeNeverDenied(t *testing.T, f Factory, a algo.Algorithm, seed int64, steps int) {
	h := newHarness(t, f, startFor(seed))
	g := newGen(seed, a, false)
	limit := limitOf(a)
	d := h.charge("fresh", a, min(limit+1, maxCharge))
	assert.True(t, d.Allowed, "a charge past the limit on a fresh key: %s", describe(d))
	if isExact(a) { // a smooth algorithm's limit is no bound: it grants any size at once
		assert.Equal(t, int64(0), d.Remaining, "a charge past the limit on a fresh key leaves nothing: %s", describe(d))
		assert.Positive(t, d.RetryAfter, "a charge past the limit on a fresh key: %s", describe(d))
	}
	assert.Zero(t, d.Wait)
	for i := 0; i < steps; i++ {
		h.clk.Add(g.forward())
		key := []string{"a", "b"}[g.r.Intn(2)]
		if g.r.Intn(3) > 0 {
			h.apply(key, a, algo.Request{N: g.small()})
			continue
		}
		n := chargeSize(g.r, limit)
		d := h.charge(key, a, n)
		require.True(t, d.Allowed, "seed %d step %d: Charge(%q, %d) denied: %s", seed, i, key, n, describe(d))
		require.Zero(t, d.Wait, "seed %d step %d: %s", seed, i, describe(d))
		require.GreaterOrEqual(t, d.Remaining, int64(0), "seed %d step %d: %s", seed, i, describe(d))
		require.GreaterOrEqual(t, d.RetryAfter, time.Duration(0), "seed %d step %d: %s", seed, i, describe(d))
		// (A leasing store answers a charge its lease covers as a grant from the lease,
		// RetryAfter 0 even when nothing is left: Remaining 0 with RetryAfter > 0 is
		// checked on a fresh key above, and on every charge by runChargeExact.)
	}
}

// checkChargeRefused: a charge is an error wrapping algo.ErrInvalidRequest when its
// algorithm does not state algo.Chargeable or its N is out of [1, 2^53], and it writes
// nothing: the key then grants its whole limit.
func checkChargeRefused(t *testing.T, f Factory) {
	h := newHarness(t, f, epoch)
	for i, a := range algo.Samples() {
		u := unchargedOf(a)
		if u == nil {
			continue
		}
		key := fmt.Sprintf("k%d", i)
		limit := limitOf(a)
		_, err := h.s.Apply(h.ctx, key, u, algo.Request{N: limit, Charge: true})
		require.ErrorIs(t, err, algo.ErrInvalidRequest, "a charge of %v, which states no capability", a)
		if chargeable(a) {
			for _, n := range []int64{0, -1, 1<<53 + 1} {
				_, err := h.s.Apply(h.ctx, key, a, algo.Request{N: n, Charge: true})
				require.ErrorIs(t, err, algo.ErrInvalidRequest, "Charge(%d) of %v", n, a)
			}
		}
		d := h.apply(key, a, algo.Request{N: limit})
		assert.True(t, d.Allowed, "%v after refused charges: the key must be fresh: %s", a, describe(d))
	}
}

// runChargeExact checks, on a store whose decisions are the algorithm's (not leasing's),
// that charges decide as the Go reference, and the RetryAfter of a charge that leaves a
// key in debt.
func runChargeExact(t *testing.T, f Factory) {
	for i, a := range chargeableSamples() {
		t.Run(fmt.Sprintf("Model/%v", a), func(t *testing.T) {
			t.Parallel()
			checkChargeModel(t, f, a, int64(9100+i), scaled(800))
		})
		if isExact(a) {
			t.Run(fmt.Sprintf("RetryAfter/%v", a), func(t *testing.T) {
				t.Parallel()
				checkChargeRetryAfter(t, f, a, int64(9200+i), scaled(60))
			})
		}
	}
}

// checkChargeModel plays random requests (with waits) and charges on two keys against
// the algorithm applied to its own states: the store's decisions are the reference's.
func checkChargeModel(t *testing.T, f Factory, a algo.Algorithm, seed int64, steps int) {
	h := newHarness(t, f, startFor(seed))
	g := newGen(seed, a, false)
	m := multiModel{}
	charges := 0
	for i := 0; i < steps; i++ {
		h.clk.Add(g.forward())
		key := []string{"a", "b"}[g.r.Intn(2)]
		req := g.request()
		if g.r.Intn(4) == 0 {
			req = algo.Request{N: chargeSize(g.r, g.limit), Charge: true}
			charges++
		}
		got := h.apply(key, a, req)
		want := a.Apply(m.state(key, a), h.now(), req)
		require.Equal(t, want, got, "seed %d step %d: Apply(%q, %+v)", seed, i, key, req)
		if req.Charge && got.Remaining == 0 && isExact(a) { // a smooth algorithm grants at once while nothing is owed
			require.Positive(t, got.RetryAfter, "seed %d step %d: a charge left nothing but RetryAfter 0: %s", seed, i, describe(got))
		}
	}
	require.Positive(t, charges)
}

// checkChargeRetryAfter: after a random history, a charge past what is left (more than
// the limit) answers Remaining 0 and RetryAfter > 0, and a request of 1 is denied until
// exactly RetryAfter and granted then.
func checkChargeRetryAfter(t *testing.T, f Factory, a algo.Algorithm, seed int64, rounds int) {
	h := newHarness(t, f, startFor(seed))
	g := newGen(seed, a, false)
	for r := 0; r < rounds; r++ {
		key := fmt.Sprintf("k%d", r)
		for range g.r.Intn(4) {
			h.apply(key, a, algo.Request{N: g.small()})
			h.clk.Add(g.forward())
		}
		n := min(g.limit+1+g.r.Int63n(2*g.limit), maxCharge)
		d := h.charge(key, a, n)
		where := fmt.Sprintf("seed %d round %d: Charge(%d) = %s", seed, r, n, describe(d))
		require.True(t, d.Allowed, where)
		require.Equal(t, int64(0), d.Remaining, where)
		require.Positive(t, d.RetryAfter, where)
		require.Zero(t, d.Wait, where)
		if d.RetryAfter == algo.Never {
			continue
		}
		one := algo.Request{N: 1}
		h.clk.Add(d.RetryAfter - time.Microsecond)
		early := h.apply(key, a, one)
		require.False(t, early.Allowed, "%s; one µs before RetryAfter: %s", where, describe(early))
		h.clk.Add(time.Microsecond)
		then := h.apply(key, a, one)
		require.True(t, then.Allowed, "%s; at RetryAfter: %s", where, describe(then))
	}
}

// runMultiCharge checks ApplyAll with a Charge (store.MultiApplier): every rule of a set
// that states algo.Chargeable throughout is charged at one instant, as the model does;
// a set with a rule that does not is refused whole, writing nothing.
func runMultiCharge(t *testing.T, f Factory) {
	i := 0
	for name, rules := range multirules.Sets() {
		seed := int64(9300 + i)
		i++
		all := true
		for _, a := range rules {
			all = all && chargeable(a)
		}
		if all {
			t.Run("Charge/"+name, func(t *testing.T) { t.Parallel(); checkMultiChargeModel(t, f, rules, seed, scaled(800)) })
		}
	}
	t.Run("ChargeRefused", func(t *testing.T) { t.Parallel(); checkMultiChargeRefused(t, f) })
}

// checkMultiChargeModel plays composite requests and charges on two keys against the
// model: a charge is granted by every rule, and each rule's state is the model's.
func checkMultiChargeModel(t *testing.T, f Factory, rules []algo.Algorithm, seed int64, steps int) {
	h := newHarness(t, f, startFor(seed))
	m := multiModel{}
	r := rand.New(rand.NewSource(seed))
	var limit int64
	for _, a := range rules {
		limit = max(limit, limitOf(a))
	}
	charges := 0
	for i := 0; i < steps; i++ {
		h.clk.Add(time.Duration(r.Intn(1200)) * time.Microsecond)
		key := []string{"a", "{b}"}[r.Intn(2)]
		req := algo.Request{N: int64(1 + r.Intn(2))}
		if r.Intn(4) == 0 {
			req = algo.Request{N: chargeSize(r, limit), Charge: true}
			charges++
		}
		got, gotOK := h.applyAll(key, rules, req)
		want, wantOK := m.applyAll(key, rules, h.now(), req)
		require.Equal(t, wantOK, gotOK, "seed %d step %d: ApplyAll(%q, %+v) = %v", seed, i, key, req, got)
		require.Equal(t, want, got, "seed %d step %d: ApplyAll(%q, %+v)", seed, i, key, req)
		if req.Charge {
			require.True(t, gotOK, "seed %d step %d: a composite charge was denied: %v", seed, i, got)
		}
	}
	require.Positive(t, charges)
}

// checkMultiChargeRefused: a composite charge with one rule that does not state
// algo.Chargeable is an error wrapping algo.ErrInvalidRequest, and no rule is charged.
func checkMultiChargeRefused(t *testing.T, f Factory) {
	h := newHarness(t, f, epoch)
	ma := h.s.(store.MultiApplier)
	tb := algo.TokenBucket{Rate: 1, Burst: 5}
	other := unchargedOf(algo.FixedWindow{Limit: 5, Window: time.Minute})
	rules := []algo.Algorithm{tb, other}
	_, _, err := ma.ApplyAll(h.ctx, "k", rules, algo.Request{N: 5, Charge: true})
	require.ErrorIs(t, err, algo.ErrInvalidRequest)
	ds, ok := h.applyAll("k", rules, algo.Request{N: 5})
	assert.True(t, ok, "no rule was charged: both grant their whole limit: %v", ds)
}

// maxCharge is the largest charge a store takes (algo.Request.Validate: 2^53).
const maxCharge = 1 << 53

// chargeSize draws a charge of 1 to three times limit, at most maxCharge.
func chargeSize(r *rand.Rand, limit int64) int64 {
	return 1 + r.Int63n(min(3*limit, maxCharge))
}
