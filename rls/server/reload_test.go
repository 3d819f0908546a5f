package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/ratekit/limiter/algo"
)

// reloadConfig is a domain with a limit on k and filler descriptors that change from one
// version to the next, leaving the rule of k alone.
func reloadConfig(limit, version int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: %d}\n", limit)
	for i := range version {
		fmt.Fprintf(&b, "  - key: filler%d\n    rate_limit: {unit: second, requests_per_unit: 1}\n", i)
	}
	return b.String()
}

// traffic sends requests for k from several goroutines until stop is called and the
// limit has been met (minOvers answers OVER_LIMIT), counting the answers.
type traffic struct {
	oks, overs, errs atomic.Int64
	stop             context.CancelFunc
	wg               sync.WaitGroup
}

const minOvers = 20

func startTraffic(ts *testServer, workers int) *traffic {
	ctx, cancel := context.WithCancel(context.Background())
	tr := &traffic{stop: cancel}
	for range workers {
		tr.wg.Go(func() {
			for ctx.Err() == nil || (tr.overs.Load() < minOvers && tr.errs.Load() == 0) {
				r, err := ts.client.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("k", "v")}})
				switch {
				case err != nil:
					tr.errs.Add(1)
				case r.OverallCode == ok:
					tr.oks.Add(1)
				default:
					tr.overs.Add(1)
				}
			}
		})
	}
	return tr
}

func (tr *traffic) finish() { tr.stop(); tr.wg.Wait() }

func TestReloadUnderTrafficKeepsCounts(t *testing.T) {
	t.Parallel()
	ts := startLocal(t, reloadConfig(10, 0), Options{})
	ts.alignTo(time.Minute) // the clock stays in this window: only the config changes
	tr := startTraffic(ts, 4)
	for v := 1; v <= 20; v++ {
		writeFile(t, ts.dir, "config.yaml", reloadConfig(10, v))
		if changed, err := ts.w.Check(); !changed || err != nil {
			t.Fatalf("reload %d: changed %v, err %v", v, changed, err)
		}
	}
	tr.finish()
	if tr.errs.Load() != 0 {
		t.Fatalf("%d calls failed during the reloads", tr.errs.Load())
	}
	if got := tr.oks.Load(); got != 10 {
		t.Fatalf("%d requests allowed across 20 reloads, want exactly the limit, 10", got)
	}
	// A higher limit applies at once, on top of the count kept.
	writeFile(t, ts.dir, "config.yaml", reloadConfig(15, 0))
	if _, err := ts.w.Check(); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if r := ts.call(t, "d", 0, desc("k", "v")); r.OverallCode != ok || r.Statuses[0].LimitRemaining != uint32(4-i) {
			t.Fatalf("after raising the limit to 15, call %d: %v", i+1, r)
		}
	}
	if r := ts.call(t, "d", 0, desc("k", "v")); r.OverallCode != over {
		t.Fatalf("16th request of 15: %v", r)
	}
	if got := ts.svc.Metrics().reloadsOK.Load(); got != 21 {
		t.Fatalf("reloads counted %d, want 21", got)
	}
}

func TestBadConfigUnderTrafficIsRefused(t *testing.T) {
	t.Parallel()
	ts := startLocal(t, reloadConfig(10, 0), Options{})
	ts.alignTo(time.Minute)
	tr := startTraffic(ts, 4)
	bad := "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 1}\n  - key: j\n    rate_limit:\n      unit: fortnight\n"
	p := writeFile(t, ts.dir, "config.yaml", bad)
	changed, err := ts.w.Check()
	if !changed || !errors.Is(err, algo.ErrInvalidConfig) || !strings.Contains(err.Error(), p+":7: descriptors[1].rate_limit.unit") {
		t.Fatalf("bad config: changed %v, err %v; want a refusal naming %s:7 and the field", changed, err, p)
	}
	if changed, err := ts.w.Check(); changed || err != nil {
		t.Fatalf("the same bad file again: changed %v, err %v; want it reported once", changed, err)
	}
	tr.finish()
	if tr.errs.Load() != 0 || tr.oks.Load() != 10 {
		t.Fatalf("%d errors and %d allowed; want the running limit of 10 kept, not the bad file's 1", tr.errs.Load(), tr.oks.Load())
	}
	if got := ts.svc.Metrics().reloadsKO.Load(); got != 1 {
		t.Fatalf("refusals counted %d, want 1", got)
	}
	writeFile(t, ts.dir, "config.yaml", reloadConfig(12, 0))
	if changed, err := ts.w.Check(); !changed || err != nil {
		t.Fatalf("fixed file: changed %v, err %v", changed, err)
	}
	if r := ts.call(t, "d", 0, desc("k", "v")); r.OverallCode != ok || r.Statuses[0].LimitRemaining != 1 {
		t.Fatalf("after the fix: %v, want the new limit 12 with the count 10 kept", r)
	}
}

func TestUnreadableConfigIsReportedOnce(t *testing.T) {
	t.Parallel()
	ts := startLocal(t, reloadConfig(10, 0), Options{})
	if err := os.Remove(filepath.Join(ts.dir, "config.yaml")); err != nil {
		t.Fatal(err)
	}
	if changed, err := ts.w.Check(); !changed || !errors.Is(err, algo.ErrInvalidConfig) {
		t.Fatalf("no file: changed %v, err %v", changed, err)
	}
	if changed, err := ts.w.Check(); changed || err != nil {
		t.Fatalf("no file again: changed %v, err %v; want it reported once", changed, err)
	}
	if r := ts.call(t, "d", 0, desc("k", "v")); r.Statuses[0].CurrentLimit.GetRequestsPerUnit() != 10 {
		t.Fatalf("the running config was dropped: %v", r)
	}
	writeFile(t, ts.dir, "config.yaml", reloadConfig(11, 0))
	if changed, err := ts.w.Check(); !changed || err != nil {
		t.Fatalf("file back: changed %v, err %v", changed, err)
	}
}
