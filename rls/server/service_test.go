package server

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// alignTo moves the fake clock to the start of the next window of length w, so the
// whole test stays inside one window until it moves the clock itself.
func (ts *testServer) alignTo(w time.Duration) {
	us := w.Microseconds()
	ts.clock.Set(time.UnixMicro((ts.clock.Now().UnixMicro()/us + 1) * us))
}

func TestOverLimitExactlyAfterNForEachUnit(t *testing.T) {
	t.Parallel()
	for unit, span := range map[string]time.Duration{
		"second": time.Second, "minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour,
		"week": 7 * 24 * time.Hour, "month": 30 * 24 * time.Hour, "year": 365 * 24 * time.Hour,
	} {
		t.Run(unit, func(t *testing.T) {
			t.Parallel()
			ts := startLocal(t, fmt.Sprintf("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: %s, requests_per_unit: 3}\n", unit), Options{})
			ts.alignTo(span)
			for i := range 3 {
				r := ts.call(t, "d", 0, desc("k", "v"))
				st := r.Statuses[0]
				if r.OverallCode != ok || st.Code != ok || st.LimitRemaining != uint32(2-i) {
					t.Fatalf("hit %d: %v, want OK with %d remaining", i+1, r, 2-i)
				}
				if got, want := st.CurrentLimit.GetRequestsPerUnit(), uint32(3); got != want || st.CurrentLimit.GetUnit().String() != strings.ToUpper(unit) {
					t.Fatalf("current_limit %v, want 3 per %s", st.CurrentLimit, unit)
				}
			}
			ts.clock.Add(span - time.Microsecond) // last instant of the window
			r := ts.call(t, "d", 0, desc("k", "v"))
			if r.OverallCode != over || r.Statuses[0].Code != over || r.Statuses[0].LimitRemaining != 0 {
				t.Fatalf("hit 4: %v, want OVER_LIMIT", r)
			}
			if got, want := r.Statuses[0].DurationUntilReset.AsDuration(), time.Microsecond; got != want {
				t.Fatalf("duration_until_reset %v, want %v", got, want)
			}
			if r := ts.call(t, "d", 0, desc("k", "other")); r.OverallCode != ok {
				t.Fatalf("another value shares the count: %v", r)
			}
			ts.clock.Add(time.Microsecond) // the next window
			if r := ts.call(t, "d", 0, desc("k", "v")); r.OverallCode != ok || r.Statuses[0].LimitRemaining != 2 {
				t.Fatalf("next window: %v, want OK with 2 remaining", r)
			}
		})
	}
}

const nestedConfig = `
domain: messaging
descriptors:
  - key: message_type
    value: marketing
    descriptors:
      - key: to_number
        rate_limit: {unit: day, requests_per_unit: 2}
  - key: to_number
    rate_limit: {unit: day, requests_per_unit: 3}
  - key: remote_address
    rate_limit: {unit: second, requests_per_unit: 10}
  - key: remote_address
    value: 50.0.0.5
    rate_limit: {unit: second, requests_per_unit: 0}
  - key: path
    value: /api/*
    rate_limit: {unit: minute, requests_per_unit: 1}
`

func TestNestedDescriptorsAndMostSpecificMatch(t *testing.T) {
	t.Parallel()
	ts := startLocal(t, nestedConfig, Options{})
	ts.alignTo(24 * time.Hour)
	marketing := desc("message_type", "marketing", "to_number", "206")
	number := desc("to_number", "206")
	// Both descriptors in one request, each counted against its own rule.
	for i := range 2 {
		r := ts.call(t, "messaging", 0, marketing, number)
		if r.OverallCode != ok || r.Statuses[0].CurrentLimit.GetRequestsPerUnit() != 2 || r.Statuses[1].CurrentLimit.GetRequestsPerUnit() != 3 {
			t.Fatalf("call %d: %v", i+1, r)
		}
	}
	r := ts.call(t, "messaging", 0, marketing, number)
	if r.OverallCode != over || r.Statuses[0].Code != over || r.Statuses[1].Code != ok || r.Statuses[1].LimitRemaining != 0 {
		t.Fatalf("third call: %v, want the nested rule over and the other at 0 remaining", r)
	}
	// A descriptor shorter or longer than the configured nesting matches nothing.
	for _, d := range [][]string{{"message_type", "marketing"}, {"to_number", "206", "x", "y"}, {"unknown", "v"}} {
		r := ts.call(t, "messaging", 0, desc(d...))
		if r.OverallCode != ok || r.Statuses[0].CurrentLimit != nil {
			t.Fatalf("%v: %v, want OK without a limit", d, r)
		}
	}
	// key and value beat the key alone; a wildcard value matches by prefix.
	if r := ts.call(t, "messaging", 0, desc("remote_address", "50.0.0.5")); r.OverallCode != over {
		t.Fatalf("blocked address: %v", r)
	}
	if r := ts.call(t, "messaging", 0, desc("remote_address", "50.0.0.6")); r.OverallCode != ok || r.Statuses[0].LimitRemaining != 9 {
		t.Fatalf("other address: %v", r)
	}
	ts.call(t, "messaging", 0, desc("path", "/api/users"))
	if r := ts.call(t, "messaging", 0, desc("path", "/api/users")); r.OverallCode != over {
		t.Fatalf("wildcard: %v", r)
	}
	if r := ts.call(t, "messaging", 0, desc("path", "/other")); r.Statuses[0].CurrentLimit != nil {
		t.Fatalf("wildcard matched another prefix: %v", r)
	}
	// An unknown domain limits nothing.
	if r := ts.call(t, "nope", 0, number); r.OverallCode != ok || r.Statuses[0].CurrentLimit != nil {
		t.Fatalf("unknown domain: %v", r)
	}
}

// TestHitsAddend runs with DenialsSpendNothing, where a refused request leaves its key as
// it was; TestDeniedHitsAreCounted has the default, the reference's counting.
func TestHitsAddend(t *testing.T) {
	t.Parallel()
	ts := startLocal(t, "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 5}\n", Options{DenialsSpendNothing: true})
	ts.alignTo(time.Minute)
	if r := ts.call(t, "d", 3, desc("k", "a")); r.OverallCode != ok || r.Statuses[0].LimitRemaining != 2 {
		t.Fatalf("hits 3: %v, want 2 remaining", r)
	}
	if r := ts.call(t, "d", 3, desc("k", "a")); r.OverallCode != over {
		t.Fatalf("hits 3 again: %v, want OVER_LIMIT", r)
	}
	// The descriptor's own hits_addend wins over the request's.
	if r := ts.call(t, "d", 3, withHits(desc("k", "a"), 2)); r.OverallCode != ok || r.Statuses[0].LimitRemaining != 0 {
		t.Fatalf("descriptor hits 2: %v, want 0 remaining", r)
	}
	// hits_addend 0 looks without spending.
	if r := ts.call(t, "d", 0, withHits(desc("k", "b"), 0)); r.OverallCode != ok || r.Statuses[0].LimitRemaining != 5 {
		t.Fatalf("descriptor hits 0: %v, want 5 remaining", r)
	}
	// Negative hits give nothing back (and spend nothing).
	neg := withHits(desc("k", "a"), 3)
	neg.IsNegativeHits = true
	if r := ts.call(t, "d", 0, neg); r.OverallCode != ok || r.Statuses[0].LimitRemaining != 0 {
		t.Fatalf("negative hits: %v, want OK with still 0 remaining", r)
	}
	// More than the limit at once is over the limit, as INCRBY would find it.
	if r := ts.call(t, "d", 6, desc("k", "c")); r.OverallCode != over {
		t.Fatalf("hits 6 of 5: %v", r)
	}
	if r := ts.call(t, "d", 0, desc("k", "c")); r.Statuses[0].LimitRemaining != 4 {
		t.Fatalf("a refused request spent permits: %v", r)
	}
}

func TestShadowMode(t *testing.T) {
	t.Parallel()
	cfg := "domain: d\ndescriptors:\n  - key: user\n    value: a\n    shadow_mode: true\n    rate_limit: {unit: minute, requests_per_unit: 1}\n  - key: user\n    value: b\n    rate_limit: {unit: minute, requests_per_unit: 1}\n"
	ts := startLocal(t, cfg, Options{})
	ts.alignTo(time.Minute)
	for range 3 {
		ts.call(t, "d", 0, desc("user", "a"))
	}
	r := ts.call(t, "d", 0, desc("user", "a"), desc("user", "b"))
	if r.OverallCode != ok || r.Statuses[0].Code != ok || r.Statuses[0].LimitRemaining != 0 || r.Statuses[0].CurrentLimit == nil {
		t.Fatalf("shadow rule: %v, want OK with 0 remaining and its limit", r)
	}
	if r := ts.call(t, "d", 0, desc("user", "b")); r.OverallCode != over {
		t.Fatalf("enforced rule beside it: %v", r)
	}
	rc := ts.svc.Metrics().rule("d.user_a")
	if got, want := rc.shadow.Load(), int64(3); got != want {
		t.Fatalf("shadow_mode count %d, want %d", got, want)
	}
	if got, want := rc.over.Load(), int64(3); got != want {
		t.Fatalf("over_limit count %d, want %d", got, want)
	}

	global := startLocal(t, "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 1}\n", Options{Shadow: true})
	global.alignTo(time.Minute)
	global.call(t, "d", 0, desc("k", "v"))
	if r := global.call(t, "d", 0, desc("k", "v")); r.OverallCode != ok || r.Statuses[0].LimitRemaining != 0 {
		t.Fatalf("global shadow: %v", r)
	}
}

func TestUnlimited(t *testing.T) {
	t.Parallel()
	ts := startLocal(t, "domain: d\ndescriptors:\n  - key: ldap\n    rate_limit: {unlimited: true}\n", Options{})
	for range 100 {
		r := ts.call(t, "d", 1000, desc("ldap", "x"))
		if r.OverallCode != ok || r.Statuses[0].LimitRemaining != math.MaxUint32 || r.Statuses[0].CurrentLimit != nil {
			t.Fatalf("unlimited: %v", r)
		}
	}
	if got := ts.svc.Metrics().rule("d.ldap").hits.Load(); got != 100_000 {
		t.Fatalf("unlimited hits counted %d, want 100000", got)
	}
}

func TestReplaces(t *testing.T) {
	t.Parallel()
	cfg := `
domain: example7
descriptors:
  - key: key_1
    value: value_1
    descriptors:
      - key: user
        value: bkthomps
        rate_limit: {name: specific_limit, requests_per_unit: 5, unit: second}
  - key: key_2
    value: value_2
    descriptors:
      - key: user
        value: bkthomps
        rate_limit:
          replaces: [{name: specific_limit}]
          requests_per_unit: 10
          unit: second
`
	ts := startLocal(t, cfg, Options{})
	ts.alignTo(time.Second)
	d1 := desc("key_1", "value_1", "user", "bkthomps")
	d2 := desc("key_2", "value_2", "user", "bkthomps")
	for i := range 10 {
		r := ts.call(t, "example7", 0, d1, d2)
		if r.OverallCode != ok || r.Statuses[0].CurrentLimit != nil || r.Statuses[1].LimitRemaining != uint32(9-i) {
			t.Fatalf("call %d: %v, want the 5/s rule replaced and the 10/s one counting", i+1, r)
		}
	}
	if r := ts.call(t, "example7", 0, d1, d2); r.OverallCode != over {
		t.Fatalf("11th: %v", r)
	}
	// The replaced rule was not counted: alone, it still has its 5.
	if r := ts.call(t, "example7", 0, d1); r.OverallCode != ok || r.Statuses[0].LimitRemaining != 4 {
		t.Fatalf("replaced rule alone: %v, want 4 remaining", r)
	}
}

func TestAlgorithmsAndRateStrings(t *testing.T) {
	t.Parallel()
	cfg := `
domain: d
algorithm: sliding-window-log
descriptors:
  - key: log
    rate_limit: {rate: 2/10s}
  - key: tb
    rate_limit: {rate: 60/min, algorithm: token-bucket, burst: 2}
`
	ts := startLocal(t, cfg, Options{})
	ts.alignTo(10 * time.Second)
	ts.call(t, "d", 0, desc("log", "x"))
	ts.clock.Add(9 * time.Second)
	r := ts.call(t, "d", 0, desc("log", "x"))
	if r.OverallCode != ok || r.Statuses[0].CurrentLimit.GetUnitMultiplier().GetValue() != 10 {
		t.Fatalf("second of 2/10s: %v", r)
	}
	ts.clock.Add(2 * time.Second) // a fixed window would have reset; the log still holds one
	ts.call(t, "d", 0, desc("log", "x"))
	if r := ts.call(t, "d", 0, desc("log", "x")); r.OverallCode != over {
		t.Fatalf("sliding log let a third through in 10 s: %v", r)
	}
	for range 2 {
		ts.call(t, "d", 0, desc("tb", "x"))
	}
	if r := ts.call(t, "d", 0, desc("tb", "x")); r.OverallCode != over {
		t.Fatalf("token bucket past its burst: %v", r)
	}
	ts.clock.Add(time.Second) // 60/min refills one a second
	if r := ts.call(t, "d", 0, desc("tb", "x")); r.OverallCode != ok {
		t.Fatalf("token bucket after a refill: %v", r)
	}
}

func TestRequestValidationAndOverride(t *testing.T) {
	t.Parallel()
	ts := startLocal(t, "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 100}\n", Options{})
	ts.alignTo(time.Minute)
	for _, req := range []*rlsv3.RateLimitRequest{{Descriptors: nil, Domain: "d"}, {Domain: "", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("k", "v")}}} {
		if _, err := ts.client.ShouldRateLimit(t.Context(), req); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("%v: err %v, want InvalidArgument", req, err)
		}
	}
	d := desc("k", "v")
	d.Limit = &ratelimitv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_MINUTE}
	ts.call(t, "d", 0, d)
	if r := ts.call(t, "d", 0, d); r.OverallCode != over || r.Statuses[0].CurrentLimit.GetRequestsPerUnit() != 1 {
		t.Fatalf("override of 1/min: %v", r)
	}
}

// envoyproxy/ratelimit ignores an override's unit_multiplier (its override has unit and
// requests_per_unit only); ratekitd never drops it silently: it is honoured whatever its
// size, and one it cannot honour is an error.
func TestOverrideUnitMultiplierIsHonouredOrRefused(t *testing.T) {
	t.Parallel()
	ts := startLocal(t, "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 100}\n", Options{})
	ts.alignTo(300 * time.Second)
	d := desc("k", "v")
	d.Limit = &ratelimitv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 5, Unit: typev3.RateLimitUnit_SECOND, UnitMultiplier: wrapperspb.UInt32(300)}
	allowed := 0
	for range 50 {
		if r := ts.call(t, "d", 0, d); r.OverallCode == ok {
			allowed++
		}
		ts.clock.Add(time.Second)
	}
	if allowed != 5 {
		t.Fatalf("5 per 300 s over 50 s: %d allowed, want 5", allowed)
	}
	r := ts.call(t, "d", 0, d)
	if cl := r.Statuses[0].CurrentLimit; cl.GetUnitMultiplier().GetValue() != 300 || cl.GetRequestsPerUnit() != 5 {
		t.Fatalf("current_limit %v, want 5 per 300 seconds", cl)
	}
	for _, m := range []uint32{0, math.MaxUint32} {
		d.Limit.UnitMultiplier = wrapperspb.UInt32(m)
		d.Limit.Unit = typev3.RateLimitUnit_YEAR
		if _, err := ts.client.ShouldRateLimit(t.Context(), &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*ratelimitv3.RateLimitDescriptor{d}}); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("unit_multiplier %d years: err %v, want InvalidArgument", m, err)
		}
	}
}

// envoyproxy/ratelimit counts every request's hits (INCRBY), denied or not: once a window's
// count passes the limit, every request of that window is OVER_LIMIT, even one that would
// have fitted in what was left before the denial. That is the default; DenialsSpendNothing
// keeps what a denial leaves.
func TestDeniedHitsAreCounted(t *testing.T) {
	t.Parallel()
	const cfg = "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 5}\n"
	for _, tc := range []struct {
		name string
		o    Options
		// the answers to hits 3, 3, 2, then 1 after a fresh key's hits 6
		want [5]rlsv3.RateLimitResponse_Code
	}{
		{"reference", Options{}, [5]rlsv3.RateLimitResponse_Code{ok, over, over, over, over}},
		{"denials spend nothing", Options{DenialsSpendNothing: true}, [5]rlsv3.RateLimitResponse_Code{ok, over, ok, over, ok}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := startLocal(t, cfg, tc.o)
			ts.alignTo(time.Minute)
			var got [5]rlsv3.RateLimitResponse_Code
			var rem [5]uint32
			for i, c := range []struct {
				key  string
				hits uint32
			}{{"a", 3}, {"a", 3}, {"a", 2}, {"b", 6}, {"b", 1}} {
				r := ts.call(t, "d", c.hits, desc("k", c.key))
				got[i], rem[i] = r.OverallCode, r.Statuses[0].LimitRemaining
			}
			if got != tc.want {
				t.Fatalf("answers %v (remaining %v), want %v", got, rem, tc.want)
			}
			if tc.o.DenialsSpendNothing {
				return
			}
			if rem[1] != 0 {
				t.Fatalf("a denial left %d remaining, want 0 as the reference's count past the limit", rem[1])
			}
			ts.clock.Add(time.Minute) // the next window starts afresh
			if r := ts.call(t, "d", 1, desc("k", "a")); r.OverallCode != ok || r.Statuses[0].LimitRemaining != 4 {
				t.Fatalf("next window: %v, want OK with 4 remaining", r)
			}
		})
	}
}
