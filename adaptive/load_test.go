package adaptive

import (
	"math"
	"testing"
	"time"

	"github.com/ratekit/limiter/clockx"
)

func TestParseProcStat(t *testing.T) {
	t.Parallel()
	stat := "cpu  100 5 50 800 40 2 3 0 7 0\ncpu0 50 2 25 400 20 1 1 0 0 0\nintr 1 2 3\n"
	busy, total, ok := parseProcStat([]byte(stat))
	if !ok || busy != 160 || total != 1000 {
		t.Fatalf("parseProcStat = %v, %v, %v; want 160, 1000, true", busy, total, ok)
	}
	for _, bad := range []string{"", "intr 1\n", "cpu  1 x 3 4 5\n"} {
		if _, _, ok := parseProcStat([]byte(bad)); ok {
			t.Errorf("parseProcStat(%q) ok", bad)
		}
	}
}

func TestSampledLoad(t *testing.T) {
	t.Parallel()
	clk := clockx.NewFake(t0)
	busy, total, reads := 0.0, 0.0, 0
	s := newSampledLoad(clk, time.Second, func() (float64, float64, bool) {
		reads++
		return busy, total, true
	})
	if got := s.Load(); got != 0 {
		t.Fatalf("first reading %v, want 0", got)
	}
	busy, total = 30, 100
	clk.Add(500 * time.Millisecond)
	if got := s.Load(); got != 0 || reads != 1 {
		t.Fatalf("within the period: %v after %d reads, want the cached 0 after 1", got, reads)
	}
	clk.Add(500 * time.Millisecond)
	if got := s.Load(); got != 0.3 {
		t.Fatalf("after a period: %v, want 0.3", got)
	}
	busy, total = 130, 200
	clk.Add(time.Second)
	if got := s.Load(); got != 1 {
		t.Fatalf("all busy: %v, want 1", got)
	}
}

func TestQuantile(t *testing.T) {
	t.Parallel()
	bounds := []float64{0, 0.001, 0.01, math.Inf(1)}
	if got := quantile([]uint64{0, 0, 0}, bounds, 0.99); got != 0 {
		t.Fatalf("empty: %v", got)
	}
	if got := quantile([]uint64{98, 1, 1}, bounds, 0.99); got != 0.01 {
		t.Fatalf("p99 of 98/1/1: %v, want 0.01", got)
	}
	if got := quantile([]uint64{90, 0, 10}, bounds, 0.99); got != 0.01 {
		t.Fatalf("p99 in the open bucket: %v, want its lower bound 0.01", got)
	}
}

func TestSystemLoadReads(t *testing.T) {
	t.Parallel()
	// Real sources: only that they answer within [0, 1].
	for i, load := range []func() float64{SystemLoad(), SchedulerLoad(0)} {
		if v := load(); v < 0 || v > 1 {
			t.Errorf("load %d (SystemLoad, SchedulerLoad) = %v, want within [0, 1]", i, v)
		}
	}
}
