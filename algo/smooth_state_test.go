package algo

import (
	"math"
	"math/rand"
	"testing"
	"time"
)

// Properties of the smooth transitions over random sequences of random configs (the
// families of the Lua differential test: +Inf and extreme rates, warm-ups of 0 and 1 µs,
// cold factors up to 1e6, config changes), random requests and time going backwards.

// TestSmoothResetAfterIsExact checks that ResetAfter is the least whole µs after which
// the state is full again (a SmoothWarmingUp state then equals a fresh one; a SmoothBursty
// one is kept smoothLinger more), and that a +Inf rate keeps its state smoothLinger after
// its reservations end.
func TestSmoothResetAfterIsExact(t *testing.T) {
	t.Parallel()
	checked := 0
	for seed := int64(1); seed <= 40; seed++ {
		r := rand.New(rand.NewSource(seed))
		warm := seed%2 == 0
		fam := smoothFamily(r, warm)
		st := fam[0].NewState().(*smoothState)
		now := 1_700_000_000_000_000 + r.Int63n(1e12)
		for step := 0; step < 400; step++ {
			a := fam[0]
			if r.Intn(5) == 0 {
				a = luaPick(r, fam)
			}
			scale := smoothScale(a)
			now += smoothTimeStep(r, scale)
			d := a.Apply(st, now, smoothRequest(r, scale))
			p := a.(interface{ params() smoothParams }).params()
			// A request that writes nothing (a denial, a request never granted) answers
			// from the state resynced to now, without storing it.
			view := *st
			view.resync(now, p)
			reset := view.resetAfter(now, p)
			if got := min(max(reset, 0), MaxMicros); got != clampMicros(usOfDuration(d.ResetAfter)) {
				t.Fatalf("seed %d step %d %v: state's reset %d µs, decision's ResetAfter %v", seed, step, a, reset, d.ResetAfter)
			}
			if reset >= MaxMicros {
				continue
			}
			debt := max(view.next-now, 0)
			fill := reset - debt
			if !warm || p.inf {
				fill -= smoothLinger
			}
			if p.inf || p.max == 0 {
				if fill != 0 {
					t.Fatalf("seed %d step %d %v: reset %d µs, want the debt %d µs (+ linger)", seed, step, a, reset, debt)
				}
				continue
			}
			full := func(at int64) bool {
				c := view
				c.resync(at, p)
				return c.stored >= p.max
			}
			if !full(now + debt + fill) {
				t.Fatalf("seed %d step %d %v: not full %d µs after the debt (stored %v of %v)", seed, step, a, fill, view.stored, p.max)
			}
			if fill > 0 && full(now+debt+fill-1) {
				t.Fatalf("seed %d step %d %v: already full %d µs after the debt", seed, step, a, fill-1)
			}
			if warm && fill == 0 && debt == 0 {
				// Fresh again: the same requests decide alike on it and on a new state.
				fresh := a.NewState()
				c := view
				for i := int64(0); i < 5; i++ {
					req := Request{N: 1 + i, MaxWait: time.Duration(i) * time.Second}
					if got, want := a.Apply(&c, now+i*scale/3, req), a.Apply(fresh, now+i*scale/3, req); got != want {
						t.Fatalf("seed %d step %d %v: a state with ResetAfter 0 decides %+v, a fresh one %+v", seed, step, a, got, want)
					}
				}
			}
			checked++
		}
	}
	if checked < 5000 {
		t.Errorf("only %d states checked", checked)
	}
}

func usOfDuration(d time.Duration) int64 {
	if d == Never {
		return MaxMicros
	}
	return int64(d / time.Microsecond)
}

// TestSmoothInvariants checks what every decision and state must satisfy, for every kind
// of config and request, with time going backwards: no NaN or infinity stored, stored
// permits within [0, maxPermits] (up to the last bit of a rescale), nextFreeTicket within
// MaxMicros of the latest now, a grant's Wait within its MaxWait and At = now + Wait, a
// denial's RetryAfter > 0, and a state asked at an earlier instant never holding more.
func TestSmoothInvariants(t *testing.T) {
	t.Parallel()
	var grants, denials, backwards int
	for seed := int64(100); seed < 160; seed++ {
		r := rand.New(rand.NewSource(seed))
		fam := smoothFamily(r, seed%2 == 0)
		st := fam[0].NewState().(*smoothState)
		now := r.Int63n(2e15) - 1e14
		latest := now
		for step := 0; step < 300; step++ {
			a := fam[0]
			if r.Intn(4) == 0 {
				a = luaPick(r, fam)
			}
			p := a.(interface{ params() smoothParams }).params()
			scale := smoothScale(a)
			prev := now
			now += smoothTimeStep(r, scale)
			latest = max(latest, now)
			if now < prev && st.valid {
				backwards++
				early, late := *st, *st
				de := a.Apply(&early, now, Request{N: never1})
				dl := a.Apply(&late, prev, Request{N: never1})
				if de.Remaining > dl.Remaining {
					t.Fatalf("seed %d step %d %v: %d permits at %d, only %d at the later %d", seed, step, a, de.Remaining, now, dl.Remaining, prev)
				}
			}
			req := smoothRequest(r, scale)
			d := a.Apply(st, now, req)
			fail := func(what string) {
				t.Helper()
				t.Fatalf("seed %d step %d %v %+v at %d: %s: %+v, state %+v", seed, step, a, req, now, what, d, *st)
			}
			if math.IsNaN(st.stored) || math.IsInf(st.stored, 0) || st.stored < 0 {
				fail("stored permits not a finite non-negative number")
			}
			if !p.inf && st.stored > p.max && st.stored > math.Nextafter(p.max, math.Inf(1)) {
				fail("stored permits above maxPermits")
			}
			if st.next > latest+MaxMicros {
				fail("nextFreeTicket beyond MaxMicros")
			}
			if d.Remaining < 0 || d.Limit < 1 || d.ResetAfter < 0 {
				fail("negative field")
			}
			if d.Allowed {
				grants++
				if d.RetryAfter != 0 || d.At != now+usOfDuration(d.Wait) || usOfDuration(d.Wait) > req.maxWaitMicros() {
					fail("grant")
				}
			} else {
				denials++
				if d.RetryAfter <= 0 || d.Wait != 0 || d.At != 0 {
					fail("denial")
				}
			}
		}
	}
	t.Logf("%d grants, %d denials, %d backward steps", grants, denials, backwards)
	if grants < 3000 || denials < 3000 || backwards < 500 {
		t.Errorf("too little exercised")
	}
}

const never1 = maxExact + 1
