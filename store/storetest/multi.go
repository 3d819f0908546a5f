package storetest

import (
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/multirules"
	"github.com/ratekit/limiter/store"
)

// runMulti checks store.MultiApplier, when the store implements it (else the part is
// skipped): ApplyAll against a model, denials that change nothing, refunds of a
// composite's grants, atomicity under concurrency, and bad input.
func runMulti(t *testing.T, f Factory) {
	if _, ok := newHarness(t, f, epoch).s.(store.MultiApplier); !ok {
		t.Skip("the store does not implement store.MultiApplier")
	}
	i := 0
	for name, rules := range multirules.Sets() {
		seed := int64(8000 + i)
		i++
		t.Run("Model/"+name, func(t *testing.T) { t.Parallel(); checkMultiModel(t, f, rules, seed, scaled(1500)) })
		t.Run("DenialKeepsState/"+name, func(t *testing.T) { t.Parallel(); checkMultiDenial(t, f, rules, seed, scaled(600)) })
	}
	runMultiCharge(t, f)
	t.Run("Concurrent", func(t *testing.T) { t.Parallel(); checkMultiConcurrent(t, f) })
	t.Run("BadInput", func(t *testing.T) { t.Parallel(); checkMultiBadInput(t, f) })
}

// applyAll calls ApplyAll and fails the test on an error.
func (h *harness) applyAll(key string, rules []algo.Algorithm, req algo.Request) ([]algo.Decision, bool) {
	h.t.Helper()
	ds, ok, err := h.s.(store.MultiApplier).ApplyAll(h.ctx, key, rules, req)
	require.NoError(h.t, err, "ApplyAll(%q, %v, %s)", key, rules, reqString(req))
	return ds, ok
}

// multiModel is the specification of ApplyAll: each rule's state of its own, every rule
// applied to a copy at one instant, the copies kept only when every rule granted; and
// Refund, rule by rule, as Store.Refund.
type multiModel map[string]algo.State // key + "\x00" + slot

func (m multiModel) state(key string, a algo.Algorithm) algo.State {
	st, ok := m[key+"\x00"+a.Slot()]
	if !ok {
		st = a.NewState()
		m[key+"\x00"+a.Slot()] = st
	}
	return st
}

func (m multiModel) applyAll(key string, rules []algo.Algorithm, now int64, req algo.Request) ([]algo.Decision, bool) {
	ds := make([]algo.Decision, len(rules))
	next := make([]algo.State, len(rules))
	ok := true
	for i, a := range rules {
		next[i] = m.state(key, a).(algo.StateCloner).CloneState() // every state of package algo copies itself
		ds[i] = a.Apply(next[i], now, req)
		ok = ok && ds[i].Allowed
	}
	if ok {
		for i, a := range rules {
			m[key+"\x00"+a.Slot()] = next[i]
		}
	}
	return ds, ok
}

// checkMultiModel plays a random timeline of composite calls on three keys, with refunds
// of earlier composite grants (rule by rule, through Store.Refund), against the model.
func checkMultiModel(t *testing.T, f Factory, rules []algo.Algorithm, seed int64, steps int) {
	h := newHarness(t, f, startFor(seed))
	m := multiModel{}
	r := rand.New(rand.NewSource(seed))
	waits := []time.Duration{0, 0, 0, 500 * time.Microsecond, 4 * time.Millisecond, algo.Forever}
	type grantOf struct {
		key string
		n   int64
		ats []int64
	}
	var grants []grantOf
	granted := 0
	for i := 0; i < steps; i++ {
		h.clk.Add(time.Duration(r.Intn(1200)) * time.Microsecond)
		now := h.now()
		if len(grants) > 0 && r.Intn(10) == 0 {
			g := grants[r.Intn(len(grants))]
			for j, a := range rules {
				h.refund(g.key, a, g.n, g.ats[j])
				a.Refund(m.state(g.key, a), now, g.n, g.ats[j])
			}
			continue
		}
		key := []string{"a", "b", "{c}"}[r.Intn(3)]
		req := algo.Request{N: int64(1 + r.Intn(2)), MaxWait: waits[r.Intn(len(waits))]}
		if r.Intn(40) == 0 {
			req.N = 30
		}
		got, gotOK := h.applyAll(key, rules, req)
		want, wantOK := m.applyAll(key, rules, now, req)
		require.Equal(t, wantOK, gotOK, "seed %d step %d: ApplyAll(%q, %s) = %v, want %v", seed, i, key, reqString(req), got, want)
		require.Equal(t, want, got, "seed %d step %d: ApplyAll(%q, %s)", seed, i, key, reqString(req))
		if gotOK {
			granted++
			g := grantOf{key: key, n: req.N}
			for _, d := range got {
				g.ats = append(g.ats, d.At)
			}
			grants = append(grants[max(0, len(grants)-15):], g)
		}
	}
	// A timeline where everything or nothing passes tests little.
	assert.True(t, granted >= steps/15 && granted <= steps*14/15,
		"seed %d: %d of %d calls granted; the timeline does not exercise both outcomes", seed, granted, steps)
}

// checkMultiDenial gives two keys the same granted history, and one of them also every
// denied call: the denials change nothing, so both keys then decide alike, rule by rule.
func checkMultiDenial(t *testing.T, f Factory, rules []algo.Algorithm, seed int64, steps int) {
	h := newHarness(t, f, startFor(seed))
	r := rand.New(rand.NewSource(seed))
	denials := 0
	for i := 0; i < steps; i++ {
		h.clk.Add(time.Duration(r.Intn(800)) * time.Microsecond)
		req := algo.Request{N: int64(1 + r.Intn(3))}
		if _, ok := h.applyAll("probed", rules, req); !ok {
			denials++
			continue
		}
		ds, ok := h.applyAll("control", rules, req)
		require.True(t, ok, "seed %d step %d: the control key denied %s what the probed key granted: %v", seed, i, reqString(req), ds)
	}
	assert.GreaterOrEqual(t, denials, steps/20, "seed %d: too few denials in %d calls", seed, steps)
	for i := 0; i < 100; i++ {
		h.clk.Add(time.Duration(r.Intn(500)) * time.Microsecond)
		for _, a := range rules {
			req := algo.Request{N: 1, MaxWait: time.Duration(r.Intn(2000)) * time.Microsecond}
			got, want := h.apply("probed", a, req), h.apply("control", a, req)
			require.Equal(t, want, got, "seed %d future step %d, %v: the key that saw denied composites decides unlike its control",
				seed, i, a)
		}
	}
}

// checkMultiConcurrent: goroutines hammering one key at a frozen instant get exactly the
// tighter rule's limit, and the denials take nothing from the looser rules.
func checkMultiConcurrent(t *testing.T, f Factory) {
	h := newHarness(t, f, epoch)
	m := h.s.(store.MultiApplier)
	rules := []algo.Algorithm{
		algo.FixedWindow{Limit: 100, Window: time.Second},
		algo.Named(algo.TokenBucket{Rate: 1, Burst: 37}, "b"),
		algo.TokenBucket{Rate: 1, Burst: 60},
	}
	var granted atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				_, ok, err := m.ApplyAll(h.ctx, "hot", rules, algo.Request{N: 1})
				if !assert.NoError(t, err) { // not require: a goroutine of the test's
					return
				}
				if ok {
					granted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	require.Equal(t, int64(37), granted.Load(), "of 160 concurrent calls granted")
	d := h.apply("hot", rules[0], algo.Request{N: 63})
	assert.True(t, d.Allowed && d.Remaining == 0, "FixedWindow 100 after the run: %s, want 63 left exactly", describe(d))
	d = h.apply("hot", rules[2], algo.Request{N: 23})
	assert.True(t, d.Allowed && d.Remaining == 0, "TokenBucket 60 after the run: %s, want 23 left exactly", describe(d))
}

// checkMultiBadInput: errors wrapping the sentinels of Store.Apply, and ErrInvalidConfig
// for no rules and for two rules of one slot; ErrClosed after Close.
func checkMultiBadInput(t *testing.T, f Factory) {
	h := newHarness(t, f, epoch)
	m := h.s.(store.MultiApplier)
	tb := algo.TokenBucket{Rate: 1, Burst: 5}
	fw := algo.FixedWindow{Limit: 5, Window: time.Second}
	for _, tc := range []struct {
		name  string
		key   string
		rules []algo.Algorithm
		req   algo.Request
		want  error
	}{
		{"no rules", "k", nil, algo.Request{N: 1}, algo.ErrInvalidConfig},
		{"empty key", "", []algo.Algorithm{tb, fw}, algo.Request{N: 1}, store.ErrInvalidKey},
		{"N=0", "k", []algo.Algorithm{tb, fw}, algo.Request{}, algo.ErrInvalidRequest},
		{"N<0", "k", []algo.Algorithm{tb, fw}, algo.Request{N: -1}, algo.ErrInvalidRequest},
		{"nil rule", "k", []algo.Algorithm{tb, nil}, algo.Request{N: 1}, algo.ErrInvalidConfig},
		{"nil named", "k", []algo.Algorithm{algo.Named(nil, "x")}, algo.Request{N: 1}, algo.ErrInvalidConfig},
		{"invalid rule", "k", []algo.Algorithm{tb, algo.FixedWindow{}}, algo.Request{N: 1}, algo.ErrInvalidConfig},
		{"shared slot", "k", []algo.Algorithm{tb, algo.TokenBucket{Rate: 9, Burst: 9}}, algo.Request{N: 1}, algo.ErrInvalidConfig},
		{"bad name", "k", []algo.Algorithm{tb, algo.Named(tb, "a:b")}, algo.Request{N: 1}, algo.ErrInvalidConfig},
	} {
		ds, ok, err := m.ApplyAll(h.ctx, tc.key, tc.rules, tc.req)
		assert.ErrorIs(t, err, tc.want, "ApplyAll, %s", tc.name)
		assert.Nil(t, ds, "ApplyAll, %s", tc.name)
		assert.False(t, ok, "ApplyAll, %s", tc.name)
	}
	// Nothing was taken by the bad calls.
	ds, ok := h.applyAll("k", []algo.Algorithm{tb, fw}, algo.Request{N: 5})
	assert.True(t, ok, "ApplyAll of both limits after the bad calls = %v, want a grant", ds)
	require.NoError(t, h.s.Close())
	_, _, err := m.ApplyAll(h.ctx, "k", []algo.Algorithm{tb}, algo.Request{N: 1})
	assert.ErrorIs(t, err, store.ErrClosed, "ApplyAll after Close")
}
