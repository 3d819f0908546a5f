package denial_test

import (
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/denial"
)

func TestEntry(t *testing.T) {
	t.Parallel()
	d := algo.Decision{Limit: 10, Remaining: 2, RetryAfter: 5 * time.Millisecond, ResetAfter: 20 * time.Millisecond}
	e := denial.Of(d, 1000, 0)
	if !e.Live(5999) || e.Live(6000) {
		t.Errorf("%+v: live until 6000 µs, the denial's RetryAfter", e)
	}
	if got, want := e.Answer(3000), (algo.Decision{Limit: 10, Remaining: 2, RetryAfter: 3 * time.Millisecond,
		ResetAfter: 18 * time.Millisecond}); got != want {
		t.Errorf("Answer(3000) = %+v, want %+v", got, want)
	}
	if got := e.Answer(30_000).ResetAfter; got != 0 {
		t.Errorf("ResetAfter past the reset: %v, want 0", got)
	}
	capped := denial.Of(d, 1000, 2000)
	if !capped.Live(2999) || capped.Live(3000) || capped.Answer(2000).RetryAfter != 4*time.Millisecond {
		t.Errorf("%+v: maxAge ends the reuse at 3000 µs, the RetryAfter stays the store's", capped)
	}
	never := denial.Of(algo.Decision{RetryAfter: algo.Never, ResetAfter: algo.Never}, 1000, 0)
	if a := never.Answer(1 << 60); !never.Live(1<<62) || a.RetryAfter != algo.Never || a.ResetAfter != algo.Never {
		t.Errorf("%+v: a Never denial answers Never, for ever", never)
	}
}
