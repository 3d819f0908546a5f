package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/store"
)

// ErrConfig reports a run that cannot be made: no store or algorithm, or a number of
// goroutines, keys or a duration that is not positive.
var ErrConfig = errors.New("bench: invalid config")

// DefaultProgressEvery is how often Run calls Config.Progress when ProgressEvery is 0.
const DefaultProgressEvery = 200 * time.Millisecond

// Config describes one run.
type Config struct {
	// Store answers every request; Run does not close it.
	Store store.Store
	// Algorithm is applied to every request (one permit, MaxWait 0).
	Algorithm algo.Algorithm
	// Goroutines is the number of workers, each calling Store.Apply in a loop.
	Goroutines int
	// Keys is the number of distinct keys, "k0" to "k<Keys-1>"; each call picks one
	// uniformly at random (from a generator seeded by the worker's index).
	Keys int
	// Duration is how long the workers run.
	Duration time.Duration
	// Progress, when not nil, is called every ProgressEvery from one goroutine while the
	// run lasts, with the time elapsed and the decisions made so far.
	Progress func(elapsed time.Duration, decisions int64)
	// ProgressEvery is the period of Progress; 0 means DefaultProgressEvery.
	ProgressEvery time.Duration
}

// Result is what a run measured.
type Result struct {
	// Elapsed is the time from the start of the workers to the end of the last one.
	Elapsed time.Duration
	// Decisions counts the calls that returned a decision; Admitted those allowed.
	Decisions, Admitted int64
	// Errors counts the calls that returned an error; FirstError is one of them.
	Errors     int64
	FirstError error
	// Latency holds the latency of every call that returned a decision.
	Latency *Histogram
	// Interrupted reports a run cut short by its context.
	Interrupted bool
}

// Rate returns the decisions per second.
func (r Result) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Decisions) / r.Elapsed.Seconds()
}

// AdmittedRatio returns Admitted / Decisions, 0 when there was no decision.
func (r Result) AdmittedRatio() float64 {
	if r.Decisions == 0 {
		return 0
	}
	return float64(r.Admitted) / float64(r.Decisions)
}

// worker is the private tally of one goroutine.
type worker struct {
	decisions atomic.Int64 // read by the progress goroutine
	_         [56]byte     // keeps the counters of two workers off one cache line
	admitted  int64
	errors    int64
	firstErr  error
	hist      Histogram
}

// Run applies cfg.Algorithm to random keys of cfg.Store from cfg.Goroutines goroutines for
// cfg.Duration, or until ctx is done (Result.Interrupted), and returns what it measured.
// A call under way when the run ends is finished, not cancelled, so that it counts as the
// decision (or error) it is. Errors of the store are counted, not returned; the error is
// for a Config that cannot run (wrapping ErrConfig or algo.ErrInvalidConfig).
func Run(ctx context.Context, cfg Config) (Result, error) {
	switch {
	case cfg.Store == nil || cfg.Algorithm == nil:
		return Result{}, fmt.Errorf("%w: a store and an algorithm are needed", ErrConfig)
	case cfg.Goroutines <= 0 || cfg.Keys <= 0 || cfg.Duration <= 0:
		return Result{}, fmt.Errorf("%w: goroutines, keys and duration must be > 0, got %d, %d and %v",
			ErrConfig, cfg.Goroutines, cfg.Keys, cfg.Duration)
	}
	if err := cfg.Algorithm.Validate(); err != nil {
		return Result{}, err
	}
	keys := make([]string, cfg.Keys)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i)
	}

	var stop atomic.Bool
	workers := make([]*worker, cfg.Goroutines)
	var wg sync.WaitGroup
	callCtx := context.WithoutCancel(ctx)
	req := algo.Request{N: 1}
	start := time.Now()
	for i := range workers {
		w := new(worker)
		workers[i] = w
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
			for !stop.Load() {
				key := keys[rng.IntN(len(keys))]
				t0 := time.Now()
				d, err := cfg.Store.Apply(callCtx, key, cfg.Algorithm, req)
				lat := time.Since(t0)
				if err != nil {
					if w.errors == 0 {
						w.firstErr = err
					}
					w.errors++
					continue
				}
				w.hist.Record(lat)
				if d.Allowed {
					w.admitted++
				}
				w.decisions.Add(1)
			}
		}(uint64(i))
	}

	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	interrupted := watch(ctx, cfg, start, workers, done)
	stop.Store(true)
	<-done
	res := Result{Elapsed: time.Since(start), Latency: new(Histogram), Interrupted: interrupted}
	for _, w := range workers {
		res.Decisions += w.decisions.Load()
		res.Admitted += w.admitted
		res.Errors += w.errors
		if res.FirstError == nil {
			res.FirstError = w.firstErr
		}
		res.Latency.Merge(&w.hist)
	}
	return res, nil
}

// watch waits until cfg.Duration has passed since start (false) or ctx is done (true),
// calling cfg.Progress on the way. done closing early (it cannot, while the workers run)
// also ends the wait.
func watch(ctx context.Context, cfg Config, start time.Time, workers []*worker, done <-chan struct{}) bool {
	timer := time.NewTimer(cfg.Duration)
	defer timer.Stop()
	var tick <-chan time.Time
	if cfg.Progress != nil {
		every := cfg.ProgressEvery
		if every <= 0 {
			every = DefaultProgressEvery
		}
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-timer.C:
			return false
		case <-ctx.Done():
			return true
		case <-done:
			return false
		case <-tick:
			var n int64
			for _, w := range workers {
				n += w.decisions.Load()
			}
			cfg.Progress(time.Since(start), n)
		}
	}
}
