package adaptive

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"time"

	"github.com/ratekit/limiter/clockx"
)

// loadEvery is how often SystemLoad and SchedulerLoad read their counters: the load they
// report is that of the last full period.
const loadEvery = time.Second

// defaultSchedulerBudget is the scheduling latency SystemLoad's fallback counts as full
// load.
const defaultSchedulerBudget = 10 * time.Millisecond

// SystemLoad returns the CPU use of the machine on Linux: the busy share of the CPU time
// counted in /proc/stat (user, nice, system, irq, softirq, steal against those plus idle
// and iowait) over the last second. Where /proc/stat cannot be read (other systems) it
// falls back to SchedulerLoad(10 * time.Millisecond). The first reading, before a full
// second has passed, is 0. The function is safe for concurrent use and cheap: it reads the
// counters at most once a second.
func SystemLoad() func() float64 {
	if runtime.GOOS == "linux" {
		if _, _, ok := readProcStat(); ok {
			return newSampledLoad(clockx.Real(), loadEvery, readProcStat).Load
		}
	}
	return SchedulerLoad(defaultSchedulerBudget)
}

// SchedulerLoad returns the 99th percentile of the time goroutines waited to run once
// runnable (runtime/metrics /sched/latencies:seconds) over the last second, divided by
// budget: 1 when it reaches budget. A process whose goroutines queue for the CPU is short
// of it, whatever the machine. A budget ≤ 0 means 10 ms.
func SchedulerLoad(budget time.Duration) func() float64 {
	if budget <= 0 {
		budget = defaultSchedulerBudget
	}
	s := &schedLatency{budget: budget, sample: []metrics.Sample{{Name: "/sched/latencies:seconds"}}}
	return newSampledLoad(clockx.Real(), loadEvery, s.read).Load
}

// sampledLoad turns cumulative counters (busy and total, in any unit) into the busy share
// of the last period, read at most once per period.
type sampledLoad struct {
	clock clockx.Clock
	every time.Duration
	read  func() (busy, total float64, ok bool)

	mu                  sync.Mutex
	at                  time.Time
	lastBusy, lastTotal float64
	value               float64
	primed              bool
}

func newSampledLoad(c clockx.Clock, every time.Duration, read func() (float64, float64, bool)) *sampledLoad {
	return &sampledLoad{clock: c, every: every, read: read}
}

func (s *sampledLoad) Load() float64 {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.primed && now.Sub(s.at) < s.every {
		return s.value
	}
	busy, total, ok := s.read()
	if !ok {
		return s.value
	}
	if s.primed && total > s.lastTotal {
		s.value = min(max((busy-s.lastBusy)/(total-s.lastTotal), 0), 1)
	}
	s.at, s.lastBusy, s.lastTotal, s.primed = now, busy, total, true
	return s.value
}

// readProcStat reads the machine's CPU counters from /proc/stat.
func readProcStat() (busy, total float64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	return parseProcStat(b)
}

// parseProcStat reads the first "cpu" line of /proc/stat: user nice system idle iowait
// irq softirq steal (guest time is already in user). Idle and iowait are idle.
func parseProcStat(b []byte) (busy, total float64, ok bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 5 || string(f[0]) != "cpu" {
			continue
		}
		var v [8]float64
		for i := 0; i < len(v) && i+1 < len(f); i++ {
			x, err := strconv.ParseUint(string(f[i+1]), 10, 64)
			if err != nil {
				return 0, 0, false
			}
			v[i] = float64(x)
		}
		idle := v[3] + v[4]
		for _, x := range v {
			total += x
		}
		return total - idle, total, true
	}
	return 0, 0, false
}

// schedLatency reads the scheduling-latency histogram and reports, as a cumulative
// counter pair, "busy" = p99 of the period's latencies / budget and "total" = 1 per read,
// so that sampledLoad's difference is that ratio.
type schedLatency struct {
	budget time.Duration
	sample []metrics.Sample
	prev   []uint64
	reads  float64
	acc    float64
}

func (s *schedLatency) read() (busy, total float64, ok bool) {
	metrics.Read(s.sample)
	if s.sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0, 0, false
	}
	h := s.sample[0].Value.Float64Histogram()
	if s.prev != nil && len(s.prev) == len(h.Counts) {
		delta := make([]uint64, len(h.Counts))
		for i, c := range h.Counts {
			delta[i] = c - s.prev[i]
		}
		s.acc += min(quantile(delta, h.Buckets, 0.99)/s.budget.Seconds(), 1)
	}
	s.prev = append(s.prev[:0], h.Counts...)
	s.reads++
	return s.acc, s.reads, true
}

// quantile returns the upper bound of the bucket holding the q-quantile of counts, whose
// bucket i spans [bounds[i], bounds[i+1]); 0 when counts are all 0.
func quantile(counts []uint64, bounds []float64, q float64) float64 {
	var n uint64
	for _, c := range counts {
		n += c
	}
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen >= rank {
			hi := bounds[i+1]
			if math.IsInf(hi, 1) {
				hi = bounds[i]
			}
			return hi
		}
	}
	return bounds[len(bounds)-1]
}
