package adaptivesim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ratekit/limiter/adaptive"
	"github.com/ratekit/limiter/clockx"
)

// ErrConfig reports a simulation that cannot be run; Run wraps it with the field.
var ErrConfig = errors.New("adaptivesim: invalid config")

// Bounds of a simulation, so that a typo cannot make Run allocate without limit.
const (
	MaxDuration = 24 * time.Hour
	MaxRows     = 10_000
	MaxArrivals = 5_000_000
	MaxCapacity = 1_000_000
)

// Config describes one simulation. Zero Load means 3 (three times what the server can
// serve), zero Interval one second.
type Config struct {
	// Algorithm moves the limit; adaptive.Fixed is a plain semaphore.
	Algorithm adaptive.Algorithm
	// Capacity is the server's number of workers, ≥ 1: its true concurrency capacity.
	Capacity int
	// Latency is the time a worker takes to serve one request, > 0.
	Latency time.Duration
	// Load is the offered rate as a multiple of what the workers serve (Capacity /
	// Latency per second), > 0.
	Load float64
	// Duration is the simulated time, in (0, MaxDuration].
	Duration time.Duration
	// Interval is the width of one row of the result.
	Interval time.Duration
	// DropAt, when > 0, is when the capacity changes to DropTo (≥ 1).
	DropAt time.Duration
	DropTo int
	// SlowAt, when > 0, is when the service time changes to SlowTo (≥ Latency), for good: a
	// request whose service starts from then on takes SlowTo. The workers stay; only their
	// speed changes, so the capacity (in flight) is the same and the rate they serve is not.
	SlowAt time.Duration
	SlowTo time.Duration
}

// Interval is one row of a result: what happened in [Start, Start+width).
type Interval struct {
	// Start is the offset of the interval from the start of the run.
	Start time.Duration
	// Offered, Admitted and Shed count the requests that arrived in the interval.
	Offered, Admitted, Shed int
	// Limit is the mean of the limit seen by the interval's arrivals (the limit at the
	// interval's start when none arrived).
	Limit float64
	// MaxInFlight is the most requests in flight at once.
	MaxInFlight int
	// Capacity is the server's number of workers at the interval's end.
	Capacity int
	// ServiceTime is the time a worker takes per request at the interval's end.
	ServiceTime time.Duration
	// Completed counts the requests that finished in the interval; TotalLatency sums
	// their latencies and MaxLatency is the longest.
	Completed    int
	TotalLatency time.Duration
	MaxLatency   time.Duration
}

// MeanLatency returns the mean latency of the interval's completions, 0 when none.
func (r Interval) MeanLatency() time.Duration {
	if r.Completed == 0 {
		return 0
	}
	return r.TotalLatency / time.Duration(r.Completed)
}

// Rate returns the offered rate of c, in requests per second.
func (c Config) Rate() float64 {
	return c.load() * float64(c.Capacity) / c.Latency.Seconds()
}

func (c Config) load() float64 {
	if c.Load == 0 {
		return 3
	}
	return c.Load
}

// serviceTime is the time a worker takes for a request whose service starts at t.
func (c Config) serviceTime(t time.Duration) time.Duration {
	if c.SlowAt > 0 && t >= c.SlowAt {
		return c.SlowTo
	}
	return c.Latency
}

func (c Config) interval() time.Duration {
	if c.Interval == 0 {
		return time.Second
	}
	return c.Interval
}

func (c Config) check() error {
	switch {
	case c.Algorithm == nil:
		return fmt.Errorf("%w: no algorithm", ErrConfig)
	case c.Capacity < 1 || c.Capacity > MaxCapacity:
		return fmt.Errorf("%w: capacity must be in [1, %d], got %d", ErrConfig, MaxCapacity, c.Capacity)
	case c.Latency <= 0:
		return fmt.Errorf("%w: latency must be > 0, got %v", ErrConfig, c.Latency)
	case !(c.load() > 0) || math.IsInf(c.load(), 0):
		return fmt.Errorf("%w: load must be a positive number, got %v", ErrConfig, c.Load)
	case c.Duration <= 0 || c.Duration > MaxDuration:
		return fmt.Errorf("%w: duration must be in (0, %v], got %v", ErrConfig, MaxDuration, c.Duration)
	case c.interval() < 0:
		return fmt.Errorf("%w: interval must be > 0, got %v", ErrConfig, c.Interval)
	case (c.Duration+c.interval()-1)/c.interval() > MaxRows:
		return fmt.Errorf("%w: %v in intervals of %v is more than %d rows", ErrConfig, c.Duration, c.interval(), MaxRows)
	case c.DropAt < 0:
		return fmt.Errorf("%w: drop time must be ≥ 0, got %v", ErrConfig, c.DropAt)
	case c.DropAt > 0 && (c.DropTo < 1 || c.DropTo > MaxCapacity):
		return fmt.Errorf("%w: capacity after the drop must be in [1, %d], got %d", ErrConfig, MaxCapacity, c.DropTo)
	case c.SlowAt < 0:
		return fmt.Errorf("%w: slow-down time must be ≥ 0, got %v", ErrConfig, c.SlowAt)
	case c.SlowAt > 0 && c.SlowTo < c.Latency:
		// A faster service would finish requests out of the order they started in.
		return fmt.Errorf("%w: service time after the slow-down must be ≥ the latency %v, got %v", ErrConfig, c.Latency, c.SlowTo)
	}
	if n := c.Rate() * c.Duration.Seconds(); !(n <= MaxArrivals) {
		return fmt.Errorf("%w: %.0f requests offered, at most %d (lower the load, capacity or duration, or raise the latency)", ErrConfig, n, MaxArrivals)
	}
	return nil
}

// request is an admitted request.
type request struct {
	tok     *adaptive.Token
	arrived time.Duration
	end     time.Duration // when its worker finishes it, once started
}

// fifo is a queue of requests.
type fifo struct {
	items []request
	head  int
}

func (q *fifo) len() int       { return len(q.items) - q.head }
func (q *fifo) push(r request) { q.items = append(q.items, r) }
func (q *fifo) peek() request  { return q.items[q.head] }
func (q *fifo) pop() (r request) {
	r = q.items[q.head]
	q.head++
	if q.head > 1024 && q.head*2 > len(q.items) { // reclaim the consumed prefix
		q.items = append(q.items[:0], q.items[q.head:]...)
		q.head = 0
	}
	return r
}

// epoch is the virtual start of every run.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Run simulates cfg and returns one Interval per Interval of Duration (the last one may
// be shorter).
func Run(cfg Config) ([]Interval, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	clk := clockx.NewFake(epoch)
	lim, err := adaptive.New(cfg.Algorithm, adaptive.WithClock(clk))
	if err != nil {
		return nil, err
	}
	step := cfg.interval()
	rows := make([]Interval, (cfg.Duration+step-1)/step)
	limitSum := make([]float64, len(rows))
	for i := range rows {
		rows[i].Start = time.Duration(i) * step
		rows[i].Limit = math.NaN()
	}
	row := func(t time.Duration) *Interval { return &rows[min(int(t/step), len(rows)-1)] }

	workers := cfg.Capacity
	// serving ends in order: one service time at a time, started in order (a slow-down
	// only lengthens the service of the requests started after it)
	var serving, waiting fifo
	start := func(t time.Duration) {
		for waiting.len() > 0 && serving.len() < workers {
			r := waiting.pop()
			r.end = t + cfg.serviceTime(t)
			serving.push(r)
		}
	}
	ctx := context.Background()
	gap := 1 / cfg.Rate() // seconds between arrivals
	dropPending := cfg.DropAt > 0 && cfg.DropAt < cfg.Duration
	for k := 0; ; {
		next := time.Duration(math.Round(float64(k) * gap * 1e9))
		if next >= cfg.Duration {
			next = -1
		}
		// Completions first at a tie: a worker freed at t serves an arrival at t.
		switch {
		case serving.len() > 0 && (next < 0 || serving.peek().end <= next) &&
			(!dropPending || serving.peek().end <= cfg.DropAt) && serving.peek().end < cfg.Duration:
			r := serving.pop()
			clk.Set(epoch.Add(r.end))
			r.tok.Done(adaptive.Success)
			lat := r.end - r.arrived
			row := row(r.end)
			row.Completed++
			row.TotalLatency += lat
			row.MaxLatency = max(row.MaxLatency, lat)
			start(r.end)
		case dropPending && (next < 0 || cfg.DropAt <= next):
			dropPending = false
			workers = cfg.DropTo
			start(cfg.DropAt)
		case next >= 0:
			k++
			clk.Set(epoch.Add(next))
			row := row(next)
			row.Offered++
			i := int(next / step)
			limitSum[min(i, len(rows)-1)] += float64(lim.Limit())
			tok, ok, _ := lim.TryAcquire(ctx) // ctx is never done
			if !ok {
				row.Shed++
				continue
			}
			row.Admitted++
			row.MaxInFlight = max(row.MaxInFlight, lim.InFlight())
			waiting.push(request{tok: tok, arrived: next})
			start(next)
		default:
			return finish(rows, limitSum, cfg), nil
		}
	}
}

// finish fills in the limits and capacities of rows.
func finish(rows []Interval, limitSum []float64, cfg Config) []Interval {
	last := math.NaN()
	for i := range rows {
		r := &rows[i]
		if r.Offered > 0 {
			r.Limit = limitSum[i] / float64(r.Offered)
		} else {
			r.Limit = last
		}
		last = r.Limit
		r.Capacity = cfg.Capacity
		if cfg.DropAt > 0 && r.Start+cfg.interval() > cfg.DropAt {
			r.Capacity = cfg.DropTo
		}
		r.ServiceTime = cfg.serviceTime(r.Start + cfg.interval() - 1)
	}
	return rows
}
