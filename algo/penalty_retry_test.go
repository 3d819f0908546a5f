package algo

import (
	"testing"
	"time"
)

// TestPenaltyBlockedRetryAfter: while blocked, RetryAfter is not only the end of the block
// but also when Rule grants the request: a leaky bucket still full when a short block ends
// would deny a retry made at RetryAfter, and that denial would be a new offence.
func TestPenaltyBlockedRetryAfter(t *testing.T) {
	p := Penalty{Rule: LeakyBucket{Rate: 10, Capacity: 5}, Block: 50 * time.Millisecond}
	st := p.NewState()
	now := int64(1_700_000_000_000_000)
	for i := 0; i < 5; i++ {
		if d := p.Apply(st, now, Request{N: 1}); !d.Allowed {
			t.Fatalf("grant %d denied: %+v", i, d)
		}
	}
	if d := p.Apply(st, now, Request{N: 1}); d.Allowed || d.RetryAfter != 100*time.Millisecond {
		t.Fatalf("offence: %+v, want a denial with the bucket's RetryAfter of 100ms", d)
	}
	now += 10_000 // blocked until +50 ms; the bucket has room again at +100 ms
	d := p.Apply(st, now, Request{N: 1})
	if d.Allowed || d.RetryAfter < 90*time.Millisecond || d.RetryAfter > 90*time.Millisecond+time.Microsecond {
		t.Fatalf("blocked: %+v, want RetryAfter 90ms (±1µs, the bucket's), not 40ms (the block's)", d)
	}
	if d := p.Apply(st, now+int64(d.RetryAfter/time.Microsecond), Request{N: 1}); !d.Allowed {
		t.Fatalf("retried at RetryAfter: %+v, want a grant", d)
	}
}
