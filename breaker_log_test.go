package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/store"
)

// recordLog is a slog.Handler keeping every record, as "LEVEL msg k=v ...".
type recordLog struct {
	mu    sync.Mutex
	lines []string
}

func (h *recordLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordLog) WithGroup(string) slog.Handler            { return h }

func (h *recordLog) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	h.mu.Lock()
	h.lines = append(h.lines, b.String())
	h.mu.Unlock()
	return nil
}

// take returns the lines logged since the last take.
func (h *recordLog) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.lines
	h.lines = nil
	return l
}

func expectLines(t *testing.T, h *recordLog, step string, want ...string) {
	t.Helper()
	got := h.take()
	if len(got) != len(want) {
		t.Fatalf("%s: logged %q, want %d lines like %q", step, got, len(want), want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Fatalf("%s: line %d is %q, want it to start with %q", step, i, got[i], want[i])
		}
	}
}

// TestOutageLogging walks an outage on the fake clock: one line when it begins (with its
// cause), one when the breaker opens, none for a failed probe or a skipped call, one when
// the store answers again (with how long the outage lasted, on the clock). One key's
// failure is no outage; an answered call between failures ends one.
func TestOutageLogging(t *testing.T) {
	t.Parallel()
	h := &recordLog{}
	l, st, _, clk := newFlaky(t, limiter.WithCircuitBreaker(limiter.CircuitBreaker{Logger: slog.New(h)}))
	call := func(step string, wantStore, wantOpen bool) { breakerCall(t, l, st, step, wantStore, wantOpen) }

	call("healthy", true, false)
	expectLines(t, h, "healthy")

	keyErr := fmt.Errorf("%w: WRONGTYPE", store.ErrKeyUnavailable)
	st.other.Store(&keyErr)
	call("one key's failure", true, false)
	expectLines(t, h, "one key's failure")
	st.other.Store(nil)

	st.down.Store(true)
	call("first failure", true, false)
	expectLines(t, h, "first failure",
		"WARN limiter: store outage began cause=redis: connection refused: limiter: store unavailable")
	for i := 0; i < 4; i++ {
		clk.Add(250 * time.Millisecond)
		call("failure", true, false)
	}
	expectLines(t, h, "the fifth failure in a row, 1 s after the first",
		"ERROR limiter: circuit breaker opened by=consecutive failures failures=5 calls=5 cool_down=1s")
	call("skipped", false, true)
	clk.Add(time.Second)
	call("the probe fails", true, false)
	call("skipped", false, true)
	expectLines(t, h, "probe and skipped calls")
	clk.Add(time.Second)
	st.down.Store(false)
	call("the probe succeeds", true, false)
	expectLines(t, h, "the probe succeeds", "INFO limiter: store recovered outage=3s")
	call("healthy", true, false)
	expectLines(t, h, "healthy again")

	// A blip: one failure, then an answer.
	st.down.Store(true)
	call("a blip", true, false)
	st.down.Store(false)
	clk.Add(40 * time.Millisecond)
	call("answered", true, false)
	expectLines(t, h, "a blip",
		"WARN limiter: store outage began", "INFO limiter: store recovered outage=40ms")
}

// TestOutageLoggingBreakerOff: with the breaker off, outages are said all the same, and
// every call goes to the store.
func TestOutageLoggingBreakerOff(t *testing.T) {
	t.Parallel()
	h := &recordLog{}
	l, st, _, clk := newFlaky(t, limiter.WithCircuitBreaker(limiter.CircuitBreaker{Off: true, Logger: slog.New(h)}))
	st.down.Store(true)
	for i := 0; i < 100; i++ {
		breakerCall(t, l, st, "failure", true, false)
		clk.Add(100 * time.Millisecond)
	}
	expectLines(t, h, "100 failures over 10 s", "WARN limiter: store outage began cause=")
	st.down.Store(false)
	breakerCall(t, l, st, "answered", true, false)
	breakerCall(t, l, st, "answered", true, false)
	expectLines(t, h, "answered", "INFO limiter: store recovered outage=10s")

	// No logger, no breaker: nothing tracked, calls go to the store.
	l2, st2, _, _ := newFlaky(t, limiter.WithCircuitBreaker(limiter.CircuitBreaker{Off: true}))
	st2.down.Store(true)
	if _, err := l2.Allow(context.Background(), "k"); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Allow = %v, want store.ErrUnavailable", err)
	}
}
