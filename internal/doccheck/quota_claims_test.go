package doccheck

import (
	"context"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/local"
)

// TestQuotaClaims holds the figures README.md (after its first example) and
// docs/algorithms.md ("Rate strings") give for "100/min": a client asking every 10 ms
// from 30 s into a minute, for 5 minutes of virtual time, on each algorithm FromQuota makes.
func TestQuotaClaims(t *testing.T) {
	t.Parallel()
	q, err := algo.ParseQuota("100/min")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                    string
		first5s, first60s, most int // grants in [0, 5 s), in [0, 60 s), in any 60 s
	}{
		{"gcra", 108, 199, 199},
		{"token-bucket", 108, 199, 199},
		{"sliding-log", 100, 100, 100},
		{"sliding-counter", 100, 149, 149},
		{"fixed-window", 100, 200, 200}, // the minute's boundary comes 30 s in
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rule, err := algo.FromQuota(tc.name, q)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC)
			clk := clockx.NewFake(start)
			st, err := local.New(local.WithClock(clk))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			l, err := limiter.New(st, rule)
			if err != nil {
				t.Fatal(err)
			}
			var grants []time.Duration
			for range 30_000 {
				d, err := l.Allow(context.Background(), "client")
				if err != nil {
					t.Fatal(err)
				}
				if d.Allowed {
					grants = append(grants, clk.Now().Sub(start))
				}
				clk.Add(10 * time.Millisecond)
			}
			within := func(from time.Duration) int {
				n := 0
				for _, g := range grants {
					if g >= from && g < from+time.Minute {
						n++
					}
				}
				return n
			}
			first5s := 0
			for _, g := range grants {
				if g < 5*time.Second {
					first5s++
				}
			}
			most := 0
			for _, g := range grants {
				most = max(most, within(g))
			}
			if first5s != tc.first5s || within(0) != tc.first60s || most != tc.most {
				t.Fatalf("first 5 s %d, first minute %d, most in any minute %d; the docs say %d, %d, %d",
					first5s, within(0), most, tc.first5s, tc.first60s, tc.most)
			}
		})
	}
}
