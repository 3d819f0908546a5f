package algo_test

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/semstate"
)

func TestSemaphoreValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg   algo.Semaphore
		field string // "" when valid
	}{
		{algo.Semaphore{Permits: 1, LeaseTTL: time.Millisecond}, ""},
		{algo.Semaphore{Permits: 1 << 53, LeaseTTL: time.Hour, Fair: true}, ""},
		{algo.Semaphore{Permits: 5, LeaseTTL: time.Duration(algo.MaxMicros) * time.Microsecond}, ""},
		{algo.Semaphore{Permits: 0, LeaseTTL: time.Second}, "Permits"},
		{algo.Semaphore{Permits: -1, LeaseTTL: time.Second}, "Permits"},
		{algo.Semaphore{Permits: 1<<53 + 1, LeaseTTL: time.Second}, "Permits"},
		{algo.Semaphore{Permits: 1}, "LeaseTTL"},
		{algo.Semaphore{Permits: 1, LeaseTTL: -time.Second}, "LeaseTTL"},
		{algo.Semaphore{Permits: 1, LeaseTTL: time.Millisecond - time.Microsecond}, "LeaseTTL"},
		{algo.Semaphore{Permits: 1, LeaseTTL: time.Second + time.Nanosecond}, "LeaseTTL"},
		{algo.Semaphore{Permits: 1, LeaseTTL: time.Duration(algo.MaxMicros+1) * time.Microsecond}, "LeaseTTL"},
	} {
		err := tc.cfg.Validate()
		if tc.field == "" {
			if err != nil {
				t.Errorf("%+v: Validate() = %v, want nil", tc.cfg, err)
			}
			continue
		}
		if !errors.Is(err, algo.ErrInvalidConfig) {
			t.Errorf("%+v: Validate() = %v, want an error wrapping ErrInvalidConfig", tc.cfg, err)
		} else if !strings.Contains(err.Error(), "Semaphore."+tc.field) {
			t.Errorf("%+v: Validate() = %q does not name Semaphore.%s", tc.cfg, err, tc.field)
		}
	}
}

// semOp is one call on a semstate.State at an instant (µs after today).
type semOp struct {
	at    int64
	op    string // acquire, release, renew, holders
	token string
	qttl  time.Duration // acquire
	want  any           // algo.SemaphoreResult, bool or int64
}

func acq(at int64, token string, qttl time.Duration, ok bool, holders, pos int64, retry time.Duration) semOp {
	return semOp{at: at, op: "acquire", token: token, qttl: qttl,
		want: algo.SemaphoreResult{Acquired: ok, Holders: holders, Position: pos, RetryAfter: retry}}
}

func rel(at int64, token string, ok bool) semOp {
	return semOp{at: at, op: "release", token: token, want: ok}
}

func renew(at int64, token string, ok bool) semOp {
	return semOp{at: at, op: "renew", token: token, want: ok}
}

func holders(at int64, n int64) semOp { return semOp{at: at, op: "holders", want: n} }

// apply runs one op on st and returns its result.
func (o semOp) apply(st *semstate.State, c algo.Semaphore, now int64) any {
	switch o.op {
	case "acquire":
		return st.Acquire(c, now, o.token, o.qttl)
	case "release":
		return st.Release(now, o.token)
	case "renew":
		return st.Renew(c, now, o.token)
	default:
		return st.Holders(now)
	}
}

func TestSemaphoreTransitions(t *testing.T) {
	t.Parallel()
	const ttl = 10 * time.Second
	s := int64(time.Second / time.Microsecond)
	q := 5 * time.Second
	for _, tc := range []struct {
		name string
		cfg  algo.Semaphore
		ops  []semOp
	}{
		{"non-fair grants up to Permits", algo.Semaphore{Permits: 2, LeaseTTL: ttl}, []semOp{
			acq(0, "a", 0, true, 1, 0, 0),
			acq(1*s, "b", 0, true, 2, 0, 0),
			acq(2*s, "c", 0, false, 2, 0, 8*time.Second), // a's lease ends at 10 s
			holders(2*s, 2),
			rel(3*s, "a", true),
			rel(3*s, "a", false), // twice
			acq(3*s, "c", 0, true, 2, 0, 0),
		}},
		{"a lease expires at LeaseTTL exactly", algo.Semaphore{Permits: 1, LeaseTTL: ttl}, []semOp{
			acq(0, "a", 0, true, 1, 0, 0),
			acq(10*s-1, "b", 0, false, 1, 0, time.Microsecond),
			holders(10*s-1, 1),
			holders(10*s, 0),
			renew(10*s, "a", false), // expired, even though nobody took it
			rel(10*s, "a", false),
			acq(10*s, "b", 0, true, 1, 0, 0),
		}},
		{"re-acquire by the holder extends and takes nothing", algo.Semaphore{Permits: 2, LeaseTTL: ttl}, []semOp{
			acq(0, "a", 0, true, 1, 0, 0),
			acq(5*s, "a", 0, true, 1, 0, 0),
			acq(6*s, "b", 0, true, 2, 0, 0),
			acq(7*s, "c", 0, false, 2, 0, 8*time.Second), // a now ends at 15 s
		}},
		{"renew keeps a long holder", algo.Semaphore{Permits: 1, LeaseTTL: ttl}, []semOp{
			acq(0, "a", 0, true, 1, 0, 0),
			renew(9*s, "a", true),
			renew(18*s, "a", true),
			acq(27*s, "b", 0, false, 1, 0, time.Second),
			renew(27*s, "b", false), // not a holder
			holders(28*s-1, 1),
			holders(28*s, 0),
		}},
		{"wrong token cannot release or renew", algo.Semaphore{Permits: 1, LeaseTTL: ttl}, []semOp{
			acq(0, "a", 0, true, 1, 0, 0),
			rel(s, "A", false),
			rel(s, "", false),
			renew(s, "b", false),
			acq(2*s, "b", 0, false, 1, 0, 8*time.Second),
		}},
		{"time going backwards creates nothing", algo.Semaphore{Permits: 1, LeaseTTL: ttl}, []semOp{
			acq(100*s, "a", 0, true, 1, 0, 0),
			acq(50*s, "b", 0, false, 1, 0, 60*time.Second),
			renew(50*s, "a", true), // does not shorten the lease to 60 s
			acq(100*s, "b", 0, false, 1, 0, 10*time.Second),
		}},
		{"fair grants in ticket order", algo.Semaphore{Permits: 2, LeaseTTL: ttl, Fair: true}, []semOp{
			acq(0, "a", q, true, 1, 0, 0),
			acq(0, "b", q, true, 2, 0, 0),
			acq(s, "c", q, false, 2, 0, 9*time.Second), // ticket 1
			acq(s, "d", q, false, 2, 1, 9*time.Second), // ticket 2
			acq(s, "e", 0, false, 2, 2, 9*time.Second), // a try: not queued
			rel(2*s, "a", true),
			acq(2*s, "d", q, false, 1, 1, 8*time.Second), // c is ahead of d
			acq(2*s, "e", 0, false, 1, 2, 8*time.Second), // and a newcomer cannot overtake
			acq(3*s, "c", q, true, 2, 0, 0),
			acq(3*s, "d", q, false, 2, 0, 7*time.Second), // d is next in line now
			rel(4*s, "b", true),
			acq(4*s, "d", q, true, 2, 0, 0),
		}},
		{"a dead waiter's place expires", algo.Semaphore{Permits: 1, LeaseTTL: ttl, Fair: true}, []semOp{
			acq(0, "a", q, true, 1, 0, 0),
			acq(s, "dead", q, false, 1, 0, 9*time.Second), // place until 6 s
			acq(2*s, "b", q, false, 1, 1, 8*time.Second),
			rel(3*s, "a", true),
			acq(4*s, "b", q, false, 0, 1, 0), // the dead waiter still holds its place
			acq(6*s-1, "b", q, false, 0, 1, 0),
			acq(6*s, "b", q, true, 1, 0, 0), // its place expired at 6 s
		}},
		{"a live waiter keeps its place by asking again", algo.Semaphore{Permits: 1, LeaseTTL: ttl, Fair: true}, []semOp{
			acq(0, "a", q, true, 1, 0, 0),
			acq(s, "w", q, false, 1, 0, 9*time.Second),
			acq(5*s, "w", q, false, 1, 0, 5*time.Second), // refreshed to 10 s
			acq(9*s, "w", q, false, 1, 0, time.Second),   // to 14 s
			acq(12*s, "x", q, false, 0, 1, 0),            // a's lease ended, but w (until 14 s) is first
			acq(12*s, "w", q, true, 1, 0, 0),
			acq(13*s, "x", q, false, 1, 0, 9*time.Second),
		}},
		{"release leaves the queue", algo.Semaphore{Permits: 1, LeaseTTL: ttl, Fair: true}, []semOp{
			acq(0, "a", q, true, 1, 0, 0),
			acq(s, "w", q, false, 1, 0, 9*time.Second),
			acq(s, "x", q, false, 1, 1, 9*time.Second),
			rel(2*s, "w", false), // gives up: held nothing
			rel(3*s, "a", true),
			acq(3*s, "x", q, true, 1, 0, 0),
		}},
		{"a try without queueing drops an old place", algo.Semaphore{Permits: 1, LeaseTTL: ttl, Fair: true}, []semOp{
			acq(0, "a", q, true, 1, 0, 0),
			acq(s, "w", q, false, 1, 0, 9*time.Second),
			acq(s, "x", q, false, 1, 1, 9*time.Second),
			acq(2*s, "w", 0, false, 1, 0, 8*time.Second),
			acq(2*s, "x", q, false, 1, 0, 8*time.Second),
		}},
		{"non-fair ignores the queue", algo.Semaphore{Permits: 1, LeaseTTL: ttl}, []semOp{
			acq(0, "a", q, true, 1, 0, 0),
			acq(s, "w", q, false, 1, 0, 9*time.Second),
			rel(2*s, "a", true),
			acq(2*s, "x", q, true, 1, 0, 0),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := semstate.New()
			for i, o := range tc.ops {
				got := o.apply(st, tc.cfg, today+o.at)
				if got != o.want {
					t.Fatalf("op %d: %s(%q) at +%dµs = %+v, want %+v", i, o.op, o.token, o.at, got, o.want)
				}
			}
		})
	}
}

// naiveSem is an independent model of semstate.State: plain scans, no bookkeeping.
type naiveSem struct {
	holders map[string]int64
	queue   []naiveWaiter // by ticket
}

type naiveWaiter struct {
	token  string
	expiry int64
}

func (m *naiveSem) expire(now int64) {
	for k, e := range m.holders {
		if e <= now {
			delete(m.holders, k)
		}
	}
	m.queue = slices.DeleteFunc(m.queue, func(w naiveWaiter) bool { return w.expiry <= now })
}

func (m *naiveSem) index(token string) int {
	return slices.IndexFunc(m.queue, func(w naiveWaiter) bool { return w.token == token })
}

func (m *naiveSem) leave(token string) {
	if i := m.index(token); i >= 0 {
		m.queue = slices.Delete(m.queue, i, i+1)
	}
}

func (m *naiveSem) acquire(c algo.Semaphore, now int64, token string, qttl time.Duration) algo.SemaphoreResult {
	m.expire(now)
	exp := now + int64(c.LeaseTTL/time.Microsecond)
	if cur, ok := m.holders[token]; ok {
		m.holders[token] = max(cur, exp)
		m.leave(token)
		return algo.SemaphoreResult{Acquired: true, Holders: int64(len(m.holders))}
	}
	held := int64(len(m.holders))
	rank := int64(0)
	if c.Fair {
		rank = int64(len(m.queue))
		if i := m.index(token); i >= 0 {
			rank = int64(i)
		}
	}
	if rank < c.Permits-held {
		m.holders[token] = exp
		m.leave(token)
		return algo.SemaphoreResult{Acquired: true, Holders: held + 1}
	}
	if c.Fair {
		q := int64(qttl / time.Microsecond)
		switch i := m.index(token); {
		case q <= 0:
			m.leave(token)
		case i >= 0:
			m.queue[i].expiry = max(m.queue[i].expiry, now+q)
		default:
			m.queue = append(m.queue, naiveWaiter{token, now + q})
		}
	}
	r := algo.SemaphoreResult{Holders: held, Position: rank}
	if held > 0 {
		first := int64(1 << 62)
		for _, e := range m.holders {
			first = min(first, e)
		}
		r.RetryAfter = time.Duration(first-now) * time.Microsecond
	}
	return r
}

// TestSemaphoreMatchesModel drives semstate.State and the naive model with seeded random
// operations, time going forwards and backwards, and requires identical answers; it also
// checks the bound (never more than Permits live leases) and that a state whose IdleAt has
// passed answers like a fresh one.
func TestSemaphoreMatchesModel(t *testing.T) {
	t.Parallel()
	for seed := int64(1); seed <= 40; seed++ {
		r := rand.New(rand.NewSource(seed))
		cfg := algo.Semaphore{
			Permits:  1 + r.Int63n(4),
			LeaseTTL: time.Duration(1+r.Intn(50)) * time.Millisecond,
			Fair:     r.Intn(2) == 0,
		}
		st := semstate.New()
		m := &naiveSem{holders: map[string]int64{}}
		now := today
		for i := 0; i < 3000; i++ {
			switch k := r.Intn(10); {
			case k < 6:
				now += r.Int63n(int64(cfg.LeaseTTL/time.Microsecond) / 4)
			case k < 7:
				now -= r.Int63n(int64(cfg.LeaseTTL/time.Microsecond) / 2)
			}
			token := fmt.Sprint("t", r.Intn(8))
			var got, want any
			var what string
			switch r.Intn(6) {
			case 0, 1, 2:
				qttl := time.Duration(r.Intn(30)) * time.Millisecond
				what = fmt.Sprintf("Acquire(%s, queue %v)", token, qttl)
				got = st.Acquire(cfg, now, token, qttl)
				want = m.acquire(cfg, now, token, qttl)
			case 3:
				what = "Release(" + token + ")"
				m.expire(now)
				_, held := m.holders[token]
				delete(m.holders, token)
				m.leave(token)
				got, want = st.Release(now, token), held
			case 4:
				what = "Renew(" + token + ")"
				m.expire(now)
				cur, held := m.holders[token]
				if held {
					m.holders[token] = max(cur, now+int64(cfg.LeaseTTL/time.Microsecond))
				}
				got, want = st.Renew(cfg, now, token), held
			default:
				what = "Holders"
				m.expire(now)
				got, want = st.Holders(now), int64(len(m.holders))
			}
			if got != want {
				t.Fatalf("seed %d, %+v, op %d at %d: %s = %+v, model says %+v", seed, cfg, i, now, what, got, want)
			}
			if n := st.Holders(now); n > cfg.Permits {
				t.Fatalf("seed %d, op %d: %d live leases > Permits %d", seed, i, n, cfg.Permits)
			}
			if idle := st.IdleAt(); idle != 0 && idle <= now && (len(m.holders) > 0 || len(m.queue) > 0) {
				t.Fatalf("seed %d, op %d: IdleAt %d ≤ now %d but the model still holds %v / %v",
					seed, i, idle, now, m.holders, m.queue)
			}
		}
	}
}

// TestSemaphoreIdleAt checks that IdleAt is when the state has become fresh again.
func TestSemaphoreIdleAt(t *testing.T) {
	t.Parallel()
	cfg := algo.Semaphore{Permits: 1, LeaseTTL: time.Second, Fair: true}
	st := semstate.New()
	if got := st.IdleAt(); got != 0 {
		t.Fatalf("fresh IdleAt = %d, want 0", got)
	}
	st.Acquire(cfg, today, "a", 0)
	st.Acquire(cfg, today, "w", 3*time.Second) // queued until today+3s
	if got, want := st.IdleAt(), today+3*sec; got != want {
		t.Fatalf("IdleAt = %d, want %d (the queue place outlives the lease)", got, want)
	}
	st.Release(today, "w")
	st.Release(today, "a")
	if got := st.IdleAt(); got != 0 {
		t.Fatalf("IdleAt after releasing everything = %d, want 0", got)
	}
}

func TestSemaphoreScriptMetadata(t *testing.T) {
	t.Parallel()
	c := algo.Semaphore{Permits: 7, LeaseTTL: 1500 * time.Millisecond, Fair: true}
	s := c.Script()
	if s != (algo.Semaphore{}).Script() {
		t.Error("Script returns a different pointer per call")
	}
	if got, want := s.Keys, []string{"", ":q", ":qe", ":n"}; !slices.Equal(got, want) {
		t.Errorf("Keys = %q, want %q", got, want)
	}
	if !strings.Contains(s.Source, "ZREMRANGEBYSCORE") || s.Name != "semaphore" {
		t.Errorf("unexpected script %q: %.80q", s.Name, s.Source)
	}
	if got, want := fmt.Sprint(c.AppendArgs(nil)), "[7 1500000 1]"; got != want {
		t.Errorf("AppendArgs = %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(algo.Semaphore{Permits: 1, LeaseTTL: time.Second}.AppendArgs([]any{"x"})), "[x 1 1000000 0]"; got != want {
		t.Errorf("AppendArgs = %s, want %s", got, want)
	}
}
