package limiter_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
)

// traced calls l.AllowN under TraceRules and returns the composite's Decision and, in the
// order reported, "rule index: allowed remaining" for each rule of names.
func traced(t *testing.T, l *limiter.Limiter, key string, n int64) (limiter.Decision, []string) {
	t.Helper()
	rules := l.Rules()
	var got []string
	ctx := limiter.TraceRules(context.Background(), func(r *limiter.Limiter, d limiter.Decision) {
		got = append(got, fmt.Sprintf("%d:%v/%d", slices.Index(rules, r), d.Allowed, d.Remaining))
	})
	d, err := l.AllowN(ctx, key, n)
	if err != nil {
		t.Fatal(err)
	}
	return d, got
}

func TestTraceRules(t *testing.T) {
	t.Parallel()
	clk := clockx.NewFake(start)
	st := newLocal(t, clk)
	fast := mustNew(t, st, algo.TokenBucket{Rate: 10, Burst: 2})
	window := mustNew(t, st, algo.FixedWindow{Limit: 5, Window: time.Minute})
	all := mustAll(t, fast, window) // one store, one key: one atomic step, both decide

	if _, got := traced(t, all, "k", 1); !slices.Equal(got, []string{"0:true/1", "1:true/4"}) {
		t.Errorf("first request: %v, want both rules' own figures", got)
	}
	traced(t, all, "k", 1)
	if d, got := traced(t, all, "k", 1); d.Allowed || !slices.Equal(got, []string{"0:false/0", "1:true/2"}) {
		t.Errorf("third request: %v %v, want the bucket's denial and the window's grant", d, got)
	}

	// On two stores the rules go one after the other: the one after a denial is not
	// reached, so not reported.
	other := newLocal(t, clk)
	seq := mustAll(t, mustNew(t, other, algo.TokenBucket{Rate: 10, Burst: 1}), mustNew(t, st, algo.FixedWindow{Limit: 5, Window: time.Minute}))
	if _, got := traced(t, seq, "j", 1); !slices.Equal(got, []string{"0:true/0", "1:true/4"}) {
		t.Errorf("sequential, first: %v", got)
	}
	if _, got := traced(t, seq, "j", 1); !slices.Equal(got, []string{"0:false/0"}) {
		t.Errorf("sequential, denied by the first rule: %v, want it alone", got)
	}

	// A rule in shadow mode does not bind, so it is not reported.
	sh := mustAll(t, mustNew(t, other, algo.Named(algo.TokenBucket{Rate: 1, Burst: 1}, "sh"), limiter.WithShadow()), window)
	if _, got := traced(t, sh, "s", 1); !slices.Equal(got, []string{"1:true/4"}) {
		t.Errorf("shadow rule: %v, want the window alone", got)
	}

	// One rule, or no TraceRules: nothing is reported, and nothing breaks.
	if _, got := traced(t, fast, "x", 1); len(got) != 0 {
		t.Errorf("one rule: %v, want nothing", got)
	}
	if ctx := limiter.TraceRules(context.Background(), nil); ctx != context.Background() {
		t.Error("TraceRules(ctx, nil) should return ctx")
	}
}
