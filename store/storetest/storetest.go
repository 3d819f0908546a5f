package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/store"
)

// Factory makes a fresh, empty store whose notion of now is clk, for example
// a store from local.New(local.WithClock(clk)) or distributed.New(client, distributed.WithClientClock(clk)).
//
// Run and Differential call a Factory from parallel subtests, so every store it returns must
// be isolated from every other (a fresh prefix on a shared Redis, not FLUSHDB). The suite
// closes each store when its test ends; a Factory may also register its own cleanup.
type Factory func(t *testing.T, clk *clockx.Fake) store.Store

// epoch is the realistic instant every clock of the suite starts from, or near:
// 2026-01-01T00:00:00Z, a whole number of days since the Unix epoch, so it is aligned to
// every window that divides a day.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Run runs the whole conformance suite against stores made by newStore: exact scenario
// tables per algorithm, randomised properties with fixed seeds, probes of what each
// decision promises, store.Admin's Peek and Reset when the store implements it (a random
// model of Apply, Refund, Peek and Reset against a twin key; skipped otherwise), charges
// decided as the algorithm decides them (every algo.Chargeable sample), and the contracts
// of RunContracts. Subtests run in parallel; the suite never sleeps (time moves
// only on the fake clocks it hands to newStore). With -short the randomised parts take a
// quarter of their steps.
func Run(t *testing.T, newStore Factory) {
	t.Helper()
	t.Run("Scenarios", func(t *testing.T) { t.Parallel(); runScenarios(t, newStore) })
	t.Run("Properties", func(t *testing.T) { t.Parallel(); runProperties(t, newStore) })
	t.Run("Probes", func(t *testing.T) { t.Parallel(); runProbes(t, newStore) })
	t.Run("Admin", func(t *testing.T) { t.Parallel(); runAdmin(t, newStore) })
	t.Run("ChargeExact", func(t *testing.T) { t.Parallel(); runChargeExact(t, newStore) })
	runContracts(t, newStore)
}

// RunContracts runs the part of the suite that holds for every Store, including one that
// trades the exactness of its decisions for cost (package leasing grants from local
// slices, so its decisions' fields and instants are not the algorithm's on one key): bad
// input, unusual keys that never share state, key and slot independence, the bound under
// concurrency, Close, calls on a done context, store.Admin's bad input, charges (never
// denied; refused ones write nothing), and store.MultiApplier (a model of ApplyAll, refunds, concurrency and bad input) when the
// store implements it. Run runs it too.
func RunContracts(t *testing.T, newStore Factory) {
	t.Helper()
	runContracts(t, newStore)
	t.Run("Admin", func(t *testing.T) {
		t.Parallel()
		t.Run("BadInput", func(t *testing.T) { t.Parallel(); runAdminBadInput(t, newStore) })
	})
}

// runContracts runs RunContracts' parts but Admin's, which Run runs with the rest of Admin.
func runContracts(t *testing.T, newStore Factory) {
	t.Run("BadInput", func(t *testing.T) { t.Parallel(); runBadInput(t, newStore) })
	t.Run("Keys", func(t *testing.T) { t.Parallel(); runKeys(t, newStore) })
	t.Run("Independence", func(t *testing.T) { t.Parallel(); runIndependence(t, newStore) })
	t.Run("Concurrency", func(t *testing.T) { t.Parallel(); runConcurrency(t, newStore) })
	t.Run("Close", func(t *testing.T) { t.Parallel(); runClose(t, newStore) })
	t.Run("Context", func(t *testing.T) { t.Parallel(); runContext(t, newStore) })
	t.Run("Multi", func(t *testing.T) { t.Parallel(); runMulti(t, newStore) })
	t.Run("Charge", func(t *testing.T) { t.Parallel(); runChargeContracts(t, newStore) })
}

// scaled returns n, or n/4 (at least 1) when testing.Short().
func scaled(n int) int {
	if testing.Short() {
		return max(1, n/4)
	}
	return n
}

// harness is one store under test with its fake clock.
type harness struct {
	t   testing.TB
	s   store.Store
	clk *clockx.Fake
	ctx context.Context
}

// newHarness makes a store whose clock reads start and closes it when t ends.
func newHarness(t *testing.T, f Factory, start time.Time) *harness {
	t.Helper()
	clk := clockx.NewFake(start)
	s := f(t, clk)
	require.NotNil(t, s, "storetest: the Factory returned a nil store")
	t.Cleanup(func() { _ = s.Close() })
	return &harness{t: t, s: s, clk: clk, ctx: context.Background()}
}

// now is the harness clock in µs since the Unix epoch.
func (h *harness) now() int64 { return h.clk.Now().UnixMicro() }

// apply calls Apply and fails the test on an error.
func (h *harness) apply(key string, a algo.Algorithm, req algo.Request) algo.Decision {
	h.t.Helper()
	d, err := h.s.Apply(h.ctx, key, a, req)
	require.NoError(h.t, err, "Apply(%q, %v, %+v) at %s", key, a, req, h.clk.Now().Format(time.RFC3339Nano))
	return d
}

// refund calls Refund and fails the test on an error.
func (h *harness) refund(key string, a algo.Algorithm, n, at int64) {
	h.t.Helper()
	require.NoError(h.t, h.s.Refund(h.ctx, key, a, n, at), "Refund(%q, %v, %d, %d)", key, a, n, at)
}

// limitOf returns the most the algorithm grants at once (Decision.Limit): its Quota's
// Limit, or 1 for an algorithm without one.
func limitOf(a algo.Algorithm) int64 {
	if q, ok := algo.QuotaOf(a); ok {
		return q.Limit
	}
	return 1
}

// scaleOf is the time over which the algorithm's state matters: its Quota's Window (a
// window, or the time a bucket's rate takes to refill the whole burst), whole µs within
// [1µs, 24h]. Random time steps are drawn around it.
func scaleOf(a algo.Algorithm) time.Duration {
	q, _ := algo.QuotaOf(a)
	return min(max(q.Window.Truncate(time.Microsecond), time.Microsecond), 24*time.Hour)
}

// describe formats a decision for failure messages.
func describe(d algo.Decision) string {
	return fmt.Sprintf("{Allowed:%t Limit:%d Remaining:%d RetryAfter:%s ResetAfter:%v Wait:%v At:%d}",
		d.Allowed, d.Limit, d.Remaining, durString(d.RetryAfter), durString(d.ResetAfter), d.Wait, d.At)
}

// durString prints Never as "Never".
func durString(d time.Duration) string {
	if d == algo.Never {
		return "Never"
	}
	return d.String()
}

// reqString formats a request, with Forever spelled out.
func reqString(r algo.Request) string {
	return fmt.Sprintf("{N:%d MaxWait:%s}", r.N, durString(r.MaxWait))
}

// errorIs fails t unless err wraps want.
func errorIs(t testing.TB, what string, err, want error) {
	t.Helper()
	assert.ErrorIs(t, err, want, what)
}
