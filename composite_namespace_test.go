package limiter_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/store"
)

// oneByOne is a store without store.MultiApplier: a composite applies its rules one by one.
type oneByOne struct {
	store.Store
	store.Admin
}

// TestAllRulesNeverMeet (issue 21, item 7): per-user and per-endpoint fixed windows of one
// length, key functions splitting "user|endpoint". The user named "/upload" calling
// "/upload" used to fail at run time ("rules 1 and 2 share the state slot"), and without
// that check the two rules would have shared one count. The second rule now counts in a
// namespace of its own: no error, and the user's and the endpoint's counts stay apart, on
// the local store and on Redis, applied atomically (store.MultiApplier), atomically with an
// observer, or rule by rule. The first rule keeps the state it has used alone; Peek and
// Reset of the composite read and forget the namespaced state too.
func TestAllRulesNeverMeet(t *testing.T) {
	t.Parallel()
	c := redistest.WithoutExpiry(redistest.Start(t).Client(t))
	user := func(k string) string { u, _, _ := strings.Cut(k, "|"); return u }
	endpoint := func(k string) string { _, e, _ := strings.Cut(k, "|"); return e }
	w := algo.FixedWindow{Limit: 3, Window: time.Minute}
	for _, mode := range []string{"atomic", "observed", "rule by rule"} {
		for _, sname := range []string{"local", "redis"} {
			t.Run(mode+"/"+sname, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				clk := clockx.NewFake(start)
				st := adminStores(t, clk, c)[sname]
				var opts []limiter.Option
				switch mode {
				case "observed":
					opts = append(opts, limiter.WithObserver(nopObserver{}))
				case "rule by rule":
					st = oneByOne{st, st.(store.Admin)}
				}
				perUser := mustNew(t, st, w, limiter.WithKeyFunc(user))
				perEndpoint := mustNew(t, st, algo.FixedWindow{Limit: 5, Window: time.Minute},
					append(opts, limiter.WithKeyFunc(endpoint))...)
				api := mustAll(t, perUser, perEndpoint)

				// "/upload" calls "/upload" three times: its own limit, 3, and 3 of the
				// endpoint's 5. Sharing one count it would stop at 3 for both and, 2
				// calls later, deny other users the endpoint early.
				for i := 0; i < 3; i++ {
					d, err := api.Allow(ctx, "/upload|/upload")
					if err != nil {
						t.Fatalf("call %d: %v", i+1, err)
					}
					if !d.Allowed {
						t.Fatalf("call %d denied: %+v", i+1, d)
					}
				}
				if d, err := api.Allow(ctx, "/upload|/upload"); err != nil || d.Allowed {
					t.Fatalf("4th call of the user: %+v, %v; want denied by the user's limit 3", d, err)
				}
				// The endpoint has 2 permits left for other users (not 0).
				for i, who := range []string{"bob", "carol"} {
					if d, err := api.Allow(ctx, who+"|/upload"); err != nil || !d.Allowed || d.Remaining != int64(1-i) {
						t.Fatalf("%s on /upload: %+v, %v; want granted, %d left of the endpoint's 5", who, d, err, 1-i)
					}
				}
				if d, err := api.Allow(ctx, "dave|/upload"); err != nil || d.Allowed {
					t.Fatalf("6th call of /upload: %+v, %v; want denied by the endpoint's limit 5", d, err)
				}
				if p, err := api.Peek(ctx, "/upload|/upload"); err != nil || p.Allowed || p.Remaining != 0 {
					t.Fatalf("Peek: %+v, %v", p, err)
				}
				// The first rule keeps the state it keeps used alone: the user's calls
				// through the composite count against perUser alone.
				if d, err := perUser.Allow(ctx, "/upload|x"); err != nil || d.Allowed {
					t.Fatalf("perUser alone after 3 calls through the composite: %+v, %v; want denied", d, err)
				}
				if err := api.Reset(ctx, "/upload|/upload"); err != nil {
					t.Fatal(err)
				}
				// Reset forgot the user's count and the endpoint's (in its namespace).
				if d, err := api.Allow(ctx, "/upload|/upload"); err != nil || !d.Allowed || d.Remaining != 2 {
					t.Fatalf("after Reset: %+v, %v; want granted, 2 left of the user's 3", d, err)
				}
				for i := 0; i < 4; i++ {
					if d, err := api.Allow(ctx, "user"+string(rune('a'+i))+"|/upload"); err != nil || !d.Allowed {
						t.Fatalf("after Reset, call %d of /upload: %+v, %v; want granted", i+2, d, err)
					}
				}
				if d, err := api.Allow(ctx, "zed|/upload"); err != nil || d.Allowed {
					t.Fatalf("after Reset, 6th call of /upload: %+v, %v; want denied by the endpoint's limit 5", d, err)
				}
			})
		}
	}
}

// TestAllRulesNeverMeetAfterSetAlgorithm: a rule given the slot of a later rule at run time
// does not meet it either: each still counts against its own limit on one key.
func TestAllRulesNeverMeetAfterSetAlgorithm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newLocal(t, clockx.NewFake(start))
	first := mustNew(t, st, algo.TokenBucket{Rate: 1e-6, Burst: 100})
	second := mustNew(t, st, algo.FixedWindow{Limit: 4, Window: time.Minute})
	api := mustAll(t, first, second)
	if err := first.SetAlgorithm(algo.FixedWindow{Limit: 2, Window: time.Minute}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, true, false} {
		if d, err := api.Allow(ctx, "k"); err != nil || d.Allowed != want {
			t.Fatalf("call %d: %+v, %v; want allowed %v (the first rule's limit 2)", i+1, d, err, want)
		}
	}
	// The second rule counted 2 of its 4 in its own state: 2 left.
	if err := first.SetAlgorithm(algo.FixedWindow{Limit: 100, Window: time.Minute}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, true, false} {
		if d, err := api.Allow(ctx, "k"); err != nil || d.Allowed != want {
			t.Fatalf("after raising the first rule, call %d: %+v, %v; want allowed %v (the second rule's 4)", i+1, d, err, want)
		}
	}
}
