package algo

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// penaltyStep is one request of a table test: at (µs after t0), N, and what to expect.
type penaltyStep struct {
	at      int64
	n       int64
	allowed bool
	retry   time.Duration // checked when not allowed
}

func runPenaltySteps(t *testing.T, p Penalty, steps []penaltyStep) {
	t.Helper()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	const t0 = 1_700_000_000_000_000
	st := p.NewState()
	for i, s := range steps {
		d := p.Apply(st, t0+s.at, Request{N: s.n})
		if d.Allowed != s.allowed || !s.allowed && d.RetryAfter != s.retry {
			t.Fatalf("step %d (at %d µs, N %d): %+v, want allowed %v retry %v", i, s.at, s.n, d, s.allowed, s.retry)
		}
	}
}

const ms = int64(time.Millisecond / time.Microsecond)

func TestPenaltyBlocks(t *testing.T) {
	// 2 per second; a denial blocks for 5 s, during which even a fresh window denies.
	p := Penalty{Rule: FixedWindow{Limit: 2, Window: time.Second}, Block: 5 * time.Second}
	runPenaltySteps(t, p, []penaltyStep{
		{at: 0, n: 1, allowed: true},
		{at: 1, n: 1, allowed: true},
		{at: 2, n: 1, retry: 5 * time.Second}, // offence: the window's retry is shorter
		{at: 1000 * ms, n: 1, retry: 4*time.Second + 2*time.Microsecond},
		{at: 3 * 1000 * ms, n: 3, retry: Never}, // blocked, and larger than the limit
		{at: 5000*ms + 1, n: 1, retry: 1 * time.Microsecond},
		{at: 5000*ms + 2, n: 1, allowed: true},
		{at: 5000*ms + 3, n: 1, allowed: true},
		{at: 5000*ms + 4, n: 1, retry: 5 * time.Second}, // fixed: a second offence blocks for Block again
	})
}

func TestPenaltyGrowthCapAndForgetting(t *testing.T) {
	p := Penalty{Rule: TokenBucket{Rate: 1, Burst: 1}, Block: time.Second, Growth: 3, MaxBlock: 5 * time.Second}
	s := int64(1000 * ms)
	runPenaltySteps(t, p, []penaltyStep{
		{at: 0, n: 1, allowed: true},
		{at: 1, n: 1, retry: time.Second},                      // offence 1: max(refill 999999 µs, 1 s)
		{at: s + 1, n: 1, allowed: true},                       // block over, bucket refilled
		{at: s + 2, n: 1, retry: 3 * time.Second},              // offence 2: ×3
		{at: 4*s + 2, n: 1, allowed: true},                     //
		{at: 4*s + 3, n: 1, retry: 5 * time.Second},            // offence 3: 9 s capped at 5 s
		{at: 9*s + 3, n: 1, allowed: true},                     //
		{at: 9*s + 4, n: 1, retry: 5 * time.Second},            // offence 4: stays at the cap
		{at: 14*s + 3, n: 1, retry: time.Microsecond},          // still blocked, one µs to go
		{at: 14*s + 4 + 5*s, n: 1, allowed: true},              // MaxBlock after the block: forgotten
		{at: 14*s + 5 + 5*s, n: 1, retry: time.Second},         // so the next offence blocks for Block
		{at: 14*s + 5 + 5*s + s, n: 1, allowed: true},          //
		{at: 14*s + 6 + 5*s + s, n: 1, retry: 3 * time.Second}, // remembered again: ×3
	})
}

func TestPenaltyHugeRequestIsNoOffence(t *testing.T) {
	p := Penalty{Rule: TokenBucket{Rate: 1, Burst: 2}, Block: time.Hour}
	runPenaltySteps(t, p, []penaltyStep{
		{at: 0, n: 3, retry: Never},
		{at: 1, n: 1 << 60, retry: Never},
		{at: 2, n: 2, allowed: true},
	})
}

func TestPenaltyMaxWaitDenialIsOffence(t *testing.T) {
	p := Penalty{Rule: TokenBucket{Rate: 1, Burst: 1}, Block: 10 * time.Second}
	st := p.NewState()
	now := int64(1e15)
	if d := p.Apply(st, now, Request{N: 1}); !d.Allowed {
		t.Fatal(d)
	}
	// Waiting up to 0.5 s is not enough for the next token: an offence.
	if d := p.Apply(st, now, Request{N: 1, MaxWait: 500 * time.Millisecond}); d.Allowed || d.RetryAfter != 10*time.Second {
		t.Fatalf("%+v", d)
	}
	// Even a reservation that the bucket would grant is denied while blocked.
	if d := p.Apply(st, now+2e6, Request{N: 1, MaxWait: time.Minute}); d.Allowed || d.RetryAfter != 8*time.Second || d.Limit != 1 {
		t.Fatalf("%+v", d)
	}
}

func TestPenaltyBackwardsClockNeverUnblocksEarly(t *testing.T) {
	p := Penalty{Rule: FixedWindow{Limit: 1, Window: time.Second}, Block: time.Minute, Growth: 2, MaxBlock: time.Hour}
	st := p.NewState()
	now := int64(1e15)
	p.Apply(st, now, Request{N: 1})
	if d := p.Apply(st, now, Request{N: 1}); d.Allowed {
		t.Fatal(d)
	}
	for _, back := range []int64{1, 1e6, 1e9, 1e12} {
		if d := p.Apply(st, now-back, Request{N: 1}); d.Allowed || d.RetryAfter < time.Minute {
			t.Fatalf("%d µs back: %+v", back, d)
		}
	}
	if d := p.Apply(st, now+60e6-1, Request{N: 1}); d.Allowed {
		t.Fatal("unblocked early", d)
	}
}

func TestPenaltyRefundPassesThrough(t *testing.T) {
	p := Penalty{Rule: TokenBucket{Rate: 1, Burst: 1}, Block: time.Second}
	st := p.NewState()
	now := int64(1e15)
	d := p.Apply(st, now, Request{N: 1})
	p.Refund(st, now, 1, d.At)
	if d := p.Apply(st, now, Request{N: 1}); !d.Allowed {
		t.Fatalf("the refunded token was not given back: %+v", d)
	}
	// A refund during a block does not end it.
	p.Apply(st, now, Request{N: 1})
	p.Refund(st, now, 1, now)
	if d := p.Apply(st, now+1, Request{N: 1}); d.Allowed {
		t.Fatalf("refund ended the block: %+v", d)
	}
}

func TestPenaltyResetAfterCoversTheBlock(t *testing.T) {
	p := Penalty{Rule: FixedWindow{Limit: 1, Window: time.Second}, Block: time.Minute, Growth: 2, MaxBlock: time.Hour}
	st := p.NewState()
	now := int64(1e15)
	p.Apply(st, now, Request{N: 1})
	if d := p.Apply(st, now, Request{N: 1}); d.ResetAfter != time.Hour+time.Minute {
		t.Fatalf("offence: ResetAfter %v, want block + MaxBlock", d.ResetAfter)
	}
	if d := p.Apply(st, now+1e6, Request{N: 1}); d.ResetAfter != time.Hour+time.Minute-time.Second {
		t.Fatalf("blocked: %+v", d)
	}
	if d := p.Apply(st, now+61e6, Request{N: 1}); !d.Allowed || d.ResetAfter != time.Hour-time.Second {
		t.Fatalf("after the block: %+v", d)
	}
}

func TestPenaltySlotAndScript(t *testing.T) {
	in := TokenBucket{Rate: 1, Burst: 1}
	p := Penalty{Rule: in, Block: time.Second}
	if p.Slot() == in.Slot() || p.Slot() != in.Slot()+":penalty" {
		t.Fatalf("slot %q", p.Slot())
	}
	if p.Script() != (Penalty{Rule: TokenBucket{Rate: 9, Burst: 9}, Block: time.Hour}).Script() {
		t.Fatal("one script per rule script")
	}
	if p.Script() == (Penalty{Rule: GCRA{Rate: 1, Burst: 1}, Block: time.Second}).Script() {
		t.Fatal("two rules share a script")
	}
	if q, ok := QuotaOf(p); !ok || q != in.quota() {
		t.Fatalf("QuotaOf: %v %v", q, ok)
	}
	if got := len(p.Script().Keys); got != 2 {
		t.Fatalf("keys %v", p.Script().Keys)
	}
}

func TestPenaltyValidate(t *testing.T) {
	tb := TokenBucket{Rate: 1, Burst: 1}
	for _, p := range []Penalty{
		{Block: time.Second},
		{Rule: TokenBucket{}, Block: time.Second},
		{Rule: tb},
		{Rule: tb, Block: -time.Second},
		{Rule: tb, Block: time.Nanosecond},
		{Rule: tb, Block: time.Second, Growth: 0.5},
		{Rule: tb, Block: time.Second, Growth: 2, MaxBlock: time.Millisecond},
		{Rule: tb, Block: time.Second, MaxBlock: 1001 * time.Nanosecond},
		{Rule: tb, Block: 40 * 365 * 24 * time.Hour},
	} {
		if err := p.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%v: %v", p, err)
		}
	}
	if err := (Penalty{Rule: tb, Block: time.Second, Growth: 2, MaxBlock: time.Hour}).Validate(); err != nil {
		t.Error(err)
	}
}

// TestPenaltyChargeIsNoOffence: a charge past the limit goes to Rule and starts no block,
// so the key is granted again as soon as Rule's debt is earned back.
func TestPenaltyChargeIsNoOffence(t *testing.T) {
	p := Penalty{Rule: TokenBucket{Rate: 1, Burst: 10}, Block: 30 * time.Second}
	const t0, s = int64(1_700_000_000_000_000), int64(1_000_000)
	st := p.NewState()
	require.True(t, p.Apply(st, t0, Request{N: 5}).Allowed)
	d := p.Apply(st, t0, Request{N: 20, Charge: true})
	assert.Equal(t, Decision{Allowed: true, Limit: 10, RetryAfter: 16 * time.Second, ResetAfter: 25 * time.Second, At: t0}, d,
		"Rule's decision: 15 in debt, earned back in 16 s")
	assert.Zero(t, st.(*penaltyState).block, "a charge is no offence")
	assert.True(t, p.Apply(st, t0+16*s, Request{N: 1}).Allowed)
}

// TestPenaltyChargeDebtDenialsAreOffences: the requests a charge's debt leaves denied are
// offences; a charge while blocked is still recorded by Rule, keeps the block as it was,
// and its RetryAfter is the later of the block's end and Rule's.
func TestPenaltyChargeDebtDenialsAreOffences(t *testing.T) {
	p := Penalty{Rule: TokenBucket{Rate: 1, Burst: 10}, Block: 30 * time.Second}
	const t0, s = int64(1_700_000_000_000_000), int64(1_000_000)
	st := p.NewState()
	ps := st.(*penaltyState)
	require.True(t, p.Apply(st, t0, Request{N: 5}).Allowed)
	require.True(t, p.Apply(st, t0, Request{N: 20, Charge: true}).Allowed) // 15 in debt
	// 14 in debt: Rule retries in 15 s, the offence blocks for 30 s.
	d := p.Apply(st, t0+s, Request{N: 1})
	assert.Equal(t, Decision{Limit: 10, RetryAfter: 30 * time.Second, ResetAfter: 30 * time.Second}, d)
	require.Equal(t, t0+31*s, ps.until)

	// Blocked: the charge is recorded (13 - 40 = 53 in debt: one permit in 54 s, full in
	// 63 s), later than the block's end (29 s); the block is unchanged.
	d = p.Apply(st, t0+2*s, Request{N: 40, Charge: true})
	assert.Equal(t, Decision{Allowed: true, Limit: 10, RetryAfter: 54 * time.Second, ResetAfter: 63 * time.Second, At: t0 + 2*s}, d)
	assert.Equal(t, t0+31*s, ps.until)
	assert.Equal(t, 30*s, ps.block)
	// Another key, blocked while Rule has no debt: the block's end is the later.
	c := p.NewState()
	require.True(t, p.Apply(c, t0, Request{N: 10}).Allowed)
	require.False(t, p.Apply(c, t0, Request{N: 1}).Allowed) // offence: blocked until t0+30 s
	d = p.Apply(c, t0+20*s, Request{N: 1, Charge: true})    // 10 tokens back, 9 left
	assert.Equal(t, Decision{Allowed: true, Limit: 10, RetryAfter: 10 * time.Second, ResetAfter: 10 * time.Second, At: t0 + 20*s}, d,
		"Remaining 0 and RetryAfter the block's end while blocked, though Rule holds 9")

	// The first key: denied until Rule has earned the debt back, granted then.
	d = p.Apply(st.(*penaltyState).CloneState(), t0+56*s-1, Request{N: 1})
	assert.False(t, d.Allowed)
	assert.True(t, p.Apply(st, t0+56*s, Request{N: 1}).Allowed)
}
