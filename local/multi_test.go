package local

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/store"
)

// multiRuleSets are the composites of these tests, tuned to their timelines (the steps of
// TestApplyAllMatchesModel, the denials of TestApplyAllDenialLeavesStatesUntouched). The
// distributed tests have their own at the millisecond scale of their Redis timelines, with
// more sets: the same names, other rules, not a copy.
func multiRuleSets() map[string][]algo.Algorithm {
	return map[string][]algo.Algorithm{
		"windows": {
			algo.FixedWindow{Limit: 10, Window: time.Second},
			algo.FixedWindow{Limit: 3, Window: 100 * time.Millisecond},
		},
		"buckets": {
			algo.TokenBucket{Rate: 100, Burst: 100},
			algo.Named(algo.TokenBucket{Rate: 200, Burst: 20}, "short"),
		},
		"mixed": {
			algo.SlidingWindowLog{Limit: 5, Window: 70 * time.Millisecond},
			algo.GCRA{Rate: 1e2 / 3, Burst: 5},
			algo.LeakyBucket{Rate: 33.3, Capacity: 4},
			algo.SlidingWindowCounter{Limit: 9, Window: 110 * time.Millisecond},
			algo.SmoothBursty{Rate: 70, MaxBurstSeconds: 0.1},
		},
	}
}

// model is the specification of ApplyAll: each rule's state on its own, every rule applied
// to a copy, the copies kept only when every rule granted.
type model struct {
	states map[string]algo.State // key + "\x00" + slot
}

func (m *model) apply(key string, rules []algo.Algorithm, now int64, req algo.Request) ([]algo.Decision, bool) {
	ds := make([]algo.Decision, len(rules))
	next := make([]algo.State, len(rules))
	ok := true
	for i, a := range rules {
		st, found := m.states[key+"\x00"+a.Slot()]
		if !found {
			st = a.NewState()
		}
		next[i] = cloneState(st)
		ds[i] = a.Apply(next[i], now, req)
		ok = ok && ds[i].Allowed
	}
	if ok {
		for i, a := range rules {
			m.states[key+"\x00"+a.Slot()] = next[i]
		}
	}
	return ds, ok
}

func TestApplyAllMatchesModel(t *testing.T) {
	t.Parallel()
	for name, rules := range multiRuleSets() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const seed = 61
			s, clk := newTestStore(t)
			m := &model{states: map[string]algo.State{}}
			rng := rand.New(rand.NewPCG(seed, 0))
			waits := []time.Duration{0, 0, 0, 5 * time.Millisecond, 40 * time.Millisecond, algo.Forever}
			granted := 0
			// Steps long enough for the rules to grant again, short enough for them to deny.
			step := map[string]int{"windows": 60_000, "buckets": 4_000, "mixed": 12_000}[name]
			for i := 0; i < 3000; i++ {
				clk.Add(time.Duration(rng.IntN(step)) * time.Microsecond)
				key := []string{"a", "b", "c"}[rng.IntN(3)]
				req := algo.Request{N: int64(1 + rng.IntN(2)), MaxWait: waits[rng.IntN(len(waits))]}
				if rng.IntN(50) == 0 {
					req.N = 1000
				}
				got, gotOK, err := s.ApplyAll(context.Background(), key, rules, req)
				if err != nil {
					t.Fatal(err)
				}
				want, wantOK := m.apply(key, rules, clk.Now().UnixMicro(), req)
				if gotOK != wantOK || !reflect.DeepEqual(got, want) {
					t.Fatalf("seed %d step %d (%s %+v): got %v %+v, want %v %+v", seed, i, key, req, gotOK, got, wantOK, want)
				}
				if gotOK {
					granted++
				}
			}
			if granted < 300 || granted > 2700 {
				t.Errorf("seed %d: %d of 3000 granted; the timeline does not exercise both outcomes", seed, granted)
			}
		})
	}
}

// states returns copies of key's states under rules, as the store holds them.
func (s *Store) statesOf(key string, rules []algo.Algorithm) []algo.State {
	h, sh := s.locate(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	out := make([]algo.State, len(rules))
	for i, a := range rules {
		if e := sh.find(h, key, a.Slot()); e != nil {
			out[i] = cloneState(e.state)
		}
	}
	return out
}

// TestApplyAllDenialLeavesStatesUntouched gives two keys the same granted history, and one
// of them also every denied call: their states stay equal, and so do their futures.
func TestApplyAllDenialLeavesStatesUntouched(t *testing.T) {
	t.Parallel()
	for name, rules := range multiRuleSets() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const seed = 7
			s, clk := newTestStore(t)
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(seed, 0))
			denials := 0
			for i := 0; i < 1000; i++ {
				clk.Add(time.Duration(rng.IntN(8_000)) * time.Microsecond)
				req := algo.Request{N: int64(1 + rng.IntN(3))}
				ds, ok, err := s.ApplyAll(ctx, "probed", rules, req)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					denials++
					if got, want := s.statesOf("probed", rules), s.statesOf("control", rules); !reflect.DeepEqual(got, want) {
						t.Fatalf("seed %d step %d: denied call %+v changed the states: %#v, control %#v", seed, i, ds, got, want)
					}
					continue
				}
				if _, ok2, err := s.ApplyAll(ctx, "control", rules, req); err != nil || !ok2 {
					t.Fatalf("seed %d step %d: control key denied what the probed key granted (%v)", seed, i, err)
				}
			}
			if denials < 50 {
				t.Errorf("seed %d: only %d denials", seed, denials)
			}
			// Same futures, rule by rule.
			for i := 0; i < 200; i++ {
				clk.Add(time.Duration(rng.IntN(5_000)) * time.Microsecond)
				for _, a := range rules {
					req := algo.Request{N: 1, MaxWait: time.Duration(rng.IntN(20)) * time.Millisecond}
					got, err1 := s.Apply(ctx, "probed", a, req)
					want, err2 := s.Apply(ctx, "control", a, req)
					if err1 != nil || err2 != nil || got != want {
						t.Fatalf("seed %d future step %d %s: probed %+v, control %+v (%v, %v)", seed, i, a.Name(), got, want, err1, err2)
					}
				}
			}
		})
	}
}

// opaque is a test algorithm whose state cannot be copied: at most Limit permits, ever,
// with an exact refund.
type opaque struct{ Limit int64 }

type opaqueState struct{ used int64 }

func (opaque) Name() string                        { return "test-opaque" }
func (opaque) Slot() string                        { return "opaque" }
func (opaque) Validate() error                     { return nil }
func (opaque) NewState() algo.State                { return &opaqueState{} }
func (opaque) Refund(st algo.State, _, n, _ int64) { st.(*opaqueState).used -= n }
func (o opaque) Apply(st algo.State, now int64, req algo.Request) algo.Decision {
	s := st.(*opaqueState)
	if s.used+req.N > o.Limit {
		return algo.Decision{Limit: o.Limit, Remaining: o.Limit - s.used, RetryAfter: algo.Never, ResetAfter: time.Hour}
	}
	s.used += req.N
	return algo.Decision{Allowed: true, Limit: o.Limit, Remaining: o.Limit - s.used, ResetAfter: time.Hour, At: now}
}

// TestApplyAllRefundsStatesItCannotCopy checks the in-place path: a rule whose state has
// no copy is applied in place and refunded when another rule denies.
func TestApplyAllRefundsStatesItCannotCopy(t *testing.T) {
	t.Parallel()
	s, _ := newTestStore(t)
	ctx := context.Background()
	rules := []algo.Algorithm{opaque{Limit: 10}, algo.FixedWindow{Limit: 3, Window: time.Second}}
	for i := 0; i < 3; i++ {
		if _, ok, err := s.ApplyAll(ctx, "k", rules, algo.Request{N: 1}); err != nil || !ok {
			t.Fatalf("call %d: %v %v", i, ok, err)
		}
	}
	ds, ok, err := s.ApplyAll(ctx, "k", rules, algo.Request{N: 1})
	if err != nil || ok || !ds[0].Allowed || ds[1].Allowed {
		t.Fatalf("4th call: %v %+v %v; want the window to deny", ok, ds, err)
	}
	if got := s.statesOf("k", rules[:1]); got[0] != nil {
		t.Fatalf("CloneState copied an opaque state: %#v", got[0])
	}
	h, sh := s.locate("k")
	sh.mu.Lock()
	used := sh.find(h, "k", "opaque").state.(*opaqueState).used
	sh.mu.Unlock()
	if used != 3 {
		t.Errorf("opaque rule holds %d permits after the denial, want 3 (the grant refunded)", used)
	}
}

// TestApplyAllMaxKeys: with room for one key, a composite of three rules keeps one state
// of its own and is decided by the overflow states for the two others (WithMaxKeys): the
// bound holds, and the denials that follow are exact.
func TestApplyAllMaxKeys(t *testing.T) {
	t.Parallel()
	s, _ := newTestStore(t, WithShards(1), WithMaxKeys(1))
	ctx := context.Background()
	rules := []algo.Algorithm{
		algo.FixedWindow{Limit: 5, Window: time.Second},
		algo.TokenBucket{Rate: 1, Burst: 2},
		algo.GCRA{Rate: 1, Burst: 4},
	}
	for i := 0; i < 2; i++ {
		if _, ok, err := s.ApplyAll(ctx, "k", rules, algo.Request{N: 1}); err != nil || !ok {
			t.Fatalf("call %d: %v %v", i, ok, err)
		}
	}
	if got := s.Len(); got != 1 {
		t.Errorf("Len() = %d, want 1 (the bound)", got)
	}
	ds, ok, err := s.ApplyAll(ctx, "k", rules, algo.Request{N: 1})
	if err != nil || ok || ds[1].Allowed || !ds[0].Allowed || ds[0].Remaining != 2 {
		t.Errorf("3rd call: %v %+v %v; want the token bucket to deny with the window at 2 left", ok, ds, err)
	}
}

// TestApplyAllDeniedFreshKeyIsSwept: a denied call on a new key leaves only fresh states,
// which the sweeper removes at once.
func TestApplyAllDeniedFreshKeyIsSwept(t *testing.T) {
	t.Parallel()
	s, _ := newTestStore(t)
	rules := multiRuleSets()["mixed"]
	if _, ok, err := s.ApplyAll(context.Background(), "k", rules, algo.Request{N: 1000}); err != nil || ok {
		t.Fatalf("N=1000: %v %v", ok, err)
	}
	s.Sweep()
	if got := s.Len(); got != 0 {
		t.Errorf("Len() after a denied call and a sweep = %d, want 0", got)
	}
}

func TestApplyAllErrors(t *testing.T) {
	t.Parallel()
	s, _ := newTestStore(t)
	ctx := context.Background()
	tb := algo.TokenBucket{Rate: 1, Burst: 5}
	for _, tc := range []struct {
		name  string
		key   string
		rules []algo.Algorithm
		req   algo.Request
		want  error
	}{
		{"no rules", "k", nil, algo.Request{N: 1}, algo.ErrInvalidConfig},
		{"empty key", "", []algo.Algorithm{tb}, algo.Request{N: 1}, store.ErrInvalidKey},
		{"N=0", "k", []algo.Algorithm{tb}, algo.Request{}, algo.ErrInvalidRequest},
		{"nil rule", "k", []algo.Algorithm{nil}, algo.Request{N: 1}, algo.ErrInvalidConfig},
		{"nil named", "k", []algo.Algorithm{algo.Named(nil, "x")}, algo.Request{N: 1}, algo.ErrInvalidConfig},
		{"shared slot", "k", []algo.Algorithm{tb, algo.TokenBucket{Rate: 2, Burst: 2}}, algo.Request{N: 1}, algo.ErrInvalidConfig},
	} {
		if _, _, err := s.ApplyAll(ctx, tc.key, tc.rules, tc.req); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	_ = s.Close()
	if _, _, err := s.ApplyAll(ctx, "k", []algo.Algorithm{tb}, algo.Request{N: 1}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
}

// TestApplyAllConcurrent: goroutines hammering one key at a frozen instant get exactly the
// tighter rule's limit, and the looser rules keep what the denials did not take.
func TestApplyAllConcurrent(t *testing.T) {
	t.Parallel()
	s, _ := newTestStore(t)
	ctx := context.Background()
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
			for i := 0; i < 50; i++ {
				_, ok, err := s.ApplyAll(ctx, "hot", rules, algo.Request{N: 1})
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					granted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if got, want := granted.Load(), int64(37); got != want {
		t.Errorf("%d of 800 calls granted, want exactly %d", got, want)
	}
	d, err := s.Apply(ctx, "hot", rules[2], algo.Request{N: 23})
	if err != nil || !d.Allowed || d.Remaining != 0 {
		t.Errorf("TokenBucket 60 after the run: %+v %v, want 23 left exactly", d, err)
	}
}
