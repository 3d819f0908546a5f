package storetest

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/store"
)

// invalidConfigs are configs every store must reject with algo.ErrInvalidConfig.
func invalidConfigs() []algo.Algorithm {
	return []algo.Algorithm{
		algo.TokenBucket{Rate: 0, Burst: 1},
		algo.TokenBucket{Rate: math.NaN(), Burst: 1},
		algo.TokenBucket{Rate: math.Inf(1), Burst: 1},
		algo.TokenBucket{Rate: -1, Burst: 1},
		algo.TokenBucket{Rate: 1, Burst: 0},
		algo.TokenBucket{Rate: 1, Burst: -5},
		algo.TokenBucket{Rate: 2e9, Burst: 1},
		algo.TokenBucket{Rate: 1, Burst: 1<<53 + 1},
		algo.GCRA{Rate: math.Inf(-1), Burst: 1},
		algo.GCRA{Rate: 2e6, Burst: 1}, // its TAT resolves µs: at most 1e6/s
		algo.GCRA{Rate: 1, Burst: 0},
		algo.LeakyBucket{Rate: math.NaN(), Capacity: 1},
		algo.LeakyBucket{Rate: 1, Capacity: 0},
		algo.FixedWindow{Limit: 1, Window: 0},
		algo.FixedWindow{Limit: 0, Window: time.Second},
		algo.FixedWindow{Limit: 1, Window: -time.Second},
		algo.FixedWindow{Limit: 1, Window: 500 * time.Nanosecond},
		algo.FixedWindow{Limit: 1, Window: 1500 * time.Nanosecond},
		algo.SlidingWindowLog{Limit: 0, Window: time.Second},
		algo.SlidingWindowLog{Limit: 1, Window: time.Nanosecond},
		algo.SlidingWindowCounter{Limit: -1, Window: time.Second},
		algo.SlidingWindowCounter{Limit: 1, Window: 0},
	}
}

// runBadInput checks that bad arguments are errors wrapping the documented sentinels, and
// never panics or decisions.
func runBadInput(t *testing.T, f Factory) {
	h := newHarness(t, f, epoch)
	ctx := h.ctx
	tb := algo.TokenBucket{Rate: 1, Burst: 1}
	call := func(what string, fn func() error) error {
		t.Helper()
		var err error
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s panicked: %v", what, p)
					err = fmt.Errorf("panic: %v", p)
				}
			}()
			err = fn()
		}()
		return err
	}
	apply := func(key string, a algo.Algorithm, req algo.Request) error {
		return call(fmt.Sprintf("Apply(%q, %v, %+v)", key, a, req), func() error {
			d, err := h.s.Apply(ctx, key, a, req)
			if err != nil && d.Allowed {
				t.Errorf("Apply(%q, %v, %+v) returned an error and an allowed decision", key, a, req)
			}
			return err
		})
	}
	refund := func(key string, a algo.Algorithm, n int64) error {
		return call(fmt.Sprintf("Refund(%q, %v, %d)", key, a, n), func() error {
			return h.s.Refund(ctx, key, a, n, h.now())
		})
	}

	errorIs(t, "Apply with an empty key", apply("", tb, algo.Request{N: 1}), store.ErrInvalidKey)
	errorIs(t, "Refund with an empty key", refund("", tb, 1), store.ErrInvalidKey)
	for _, n := range []int64{0, -1, math.MinInt64} {
		errorIs(t, fmt.Sprintf("Apply with N = %d", n), apply("k", tb, algo.Request{N: n}), algo.ErrInvalidRequest)
		errorIs(t, fmt.Sprintf("Apply with N = %d and MaxWait Forever", n),
			apply("k", tb, algo.Request{N: n, MaxWait: algo.Forever}), algo.ErrInvalidRequest)
	}
	if err := apply("k", nil, algo.Request{N: 1}); err == nil {
		t.Error("Apply with a nil algorithm: no error")
	}
	if err := refund("k", nil, 1); err == nil {
		t.Error("Refund with a nil algorithm: no error")
	}
	for _, a := range invalidConfigs() {
		errorIs(t, fmt.Sprintf("Apply with %#v", a), apply("k", a, algo.Request{N: 1}), algo.ErrInvalidConfig)
		errorIs(t, fmt.Sprintf("Refund with %#v", a), refund("k", a, 1), algo.ErrInvalidConfig)
	}

	// None of the above may have touched key "k": its bucket is still full.
	if d := h.apply("k", tb, algo.Request{N: 1}); !d.Allowed {
		t.Errorf("after rejected calls, the first request on the key was denied: %s", describe(d))
	}
	// A refund of n ≤ 0 is either rejected or does nothing: the bucket stays empty.
	for _, n := range []int64{0, -1} {
		_ = refund("k", tb, n)
	}
	if d := h.apply("k", tb, algo.Request{N: 1}); d.Allowed {
		t.Errorf("after Refund with n ≤ 0, an empty bucket allowed a request: %s", describe(d))
	}
	// Refunding a grant that never happened, or of a key never seen, is harmless.
	_ = refund("never-seen", tb, 1)
	if d := h.apply("never-seen", tb, algo.Request{N: 1}); !d.Allowed {
		t.Errorf("Refund on an unseen key changed it: %s", describe(d))
	}
}

// oddKeys are keys that must each name their own state: braces (Redis hash tags), key
// separators, unicode, invalid UTF-8, NUL bytes, spaces and a 10 KB key.
func oddKeys() []string {
	return []string{
		"a", "a{b}", "{a}", "{a}b", "a}", "{", "}", "{}", "a{}", "A",
		"a:fw:1000000", "a:tb", "fw:1000000", "a:", ":a", "a\x00", "a\x00b", "\x00",
		"a b", " a", "a ", " ", "\t", "\n", "日本語", "日本", "\xff\xfe", "é", "e\u0301",
		"%s", "*", "?", "[a]", "a*", strings.Repeat("x", 10<<10), strings.Repeat("x", 10<<10-1),
	}
}

// runKeys checks that unusual keys work and never share state: each key's first request is
// allowed (so no key before it shared its state) and its second denied.
func runKeys(t *testing.T, f Factory) {
	for _, a := range []algo.Algorithm{
		algo.FixedWindow{Limit: 1, Window: time.Hour},
		algo.TokenBucket{Rate: 1e-3, Burst: 1},
		algo.SlidingWindowLog{Limit: 1, Window: time.Hour},
	} {
		h := newHarness(t, f, epoch)
		for _, key := range oddKeys() {
			if d := h.apply(key, a, algo.Request{N: 1}); !d.Allowed {
				t.Errorf("%v: first request on key %.40q denied (state shared with an earlier key?): %s", a, key, describe(d))
			}
			if d := h.apply(key, a, algo.Request{N: 1}); d.Allowed {
				t.Errorf("%v: second request on key %.40q allowed (state not kept?): %s", a, key, describe(d))
			}
		}
	}
}

// runClose checks that calls after Close fail with store.ErrClosed, and that a second
// Close does not panic.
func runClose(t *testing.T, f Factory) {
	h := newHarness(t, f, epoch)
	tb := algo.TokenBucket{Rate: 1, Burst: 1}
	d := h.apply("k", tb, algo.Request{N: 1})
	if err := h.s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, err := h.s.Apply(h.ctx, "k", tb, algo.Request{N: 1})
	errorIs(t, "Apply after Close", err, store.ErrClosed)
	errorIs(t, "Refund after Close", h.s.Refund(h.ctx, "k", tb, 1, d.At), store.ErrClosed)
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("a second Close panicked: %v", p)
			}
		}()
		if err := h.s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
			t.Errorf("a second Close: %v, want nil or an error wrapping ErrClosed", err)
		}
	}()
}
