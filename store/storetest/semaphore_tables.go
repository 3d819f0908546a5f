package storetest

import (
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

// The exact tables of RunSemaphore: each is one semaphore, fresh, driven step by step at
// instants relative to the start of the fake clock.

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
		{"RefreshNeverShortensAPlace", fairOne, []semStep{
			semGrant(0, "a", q, 1),
			semDeny(s, "w", q, 1, 0, 9*s),   // until 6 s
			semDeny(2*s, "w", s, 1, 0, 8*s), // asks to stay until 3 s only: keeps 6 s
			semDeny(4*s, "x", q, 1, 1, 6*s), // w is still ahead
			semDeny(6*s, "x", q, 1, 0, 4*s), // and gone at 6 s
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
