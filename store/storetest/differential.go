package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

// DiffOptions configures Differential.
type DiffOptions struct {
	// Steps is the number of random operations per algorithm; 0 means 2000.
	Steps int
	// Seed seeds the random sequence; the seed of each algorithm's sequence is derived from
	// it and printed on failure. 0 means 1.
	Seed int64
	// Algorithms are the configs to drive; nil means Algorithms().
	Algorithms []algo.Algorithm
}

// diffKeys are the few keys a differential run spreads its requests over, so that keys
// interleave and each key sees many requests.
var diffKeys = []string{"a", "b", "{c}", "d\x00e"}

// Differential drives two stores, each made by its own Factory with its own fake clock,
// with the same seeded random sequence of operations per algorithm: requests on random
// keys from a small set, N from 1 to beyond the limit, MaxWait 0, negative, short, long or
// algo.Forever; time steps of zero, microseconds, parts of the algorithm's window (or
// refill time), several windows, and occasionally backwards (both clocks always read the
// same instant); and refunds of random earlier grants. It fails at the first difference
// with the algorithm, seed, step number, the operation and both results; decisions are
// compared field by field and errors by whether they are nil.
//
// Use it to check a second implementation (the Redis store) against the first (the local
// store, whose transitions are the reference).
func Differential(t *testing.T, a, b Factory, opts DiffOptions) {
	t.Helper()
	if opts.Steps <= 0 {
		opts.Steps = 2000
	}
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	algs := opts.Algorithms
	if algs == nil {
		algs = Algorithms()
	}
	for i, alg := range algs {
		seed := opts.Seed*1_000_003 + int64(i)
		t.Run(fmt.Sprintf("%d:%v", i, alg), func(t *testing.T) {
			t.Parallel()
			if err := diffRun(t, a, b, alg, seed, opts.Steps); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// diffOp is one operation of a differential run, for failure messages.
type diffOp struct {
	step   int
	now    time.Time
	key    string
	req    algo.Request
	refund *grantRef // non-nil for a Refund
	da, db algo.Decision
	ea, eb error
}

// grantRef identifies an earlier grant for Refund.
type grantRef struct {
	key   string
	n, at int64
}

func (o diffOp) String() string {
	when := o.now.UTC().Format("2006-01-02T15:04:05.000000Z")
	if o.refund != nil {
		return fmt.Sprintf("step %d at %s (%d µs): Refund(%q, n=%d, at=%d)\n    a: error %v\n    b: error %v",
			o.step, when, o.now.UnixMicro(), o.refund.key, o.refund.n, o.refund.at, o.ea, o.eb)
	}
	return fmt.Sprintf("step %d at %s (%d µs): Apply(%q, %s)\n    a: %s error %v\n    b: %s error %v",
		o.step, when, o.now.UnixMicro(), o.key, reqString(o.req), describe(o.da), o.ea, describe(o.db), o.eb)
}

// diffRun plays one algorithm's sequence on a fresh pair of stores and describes the
// first difference, with the operations on its key before it.
func diffRun(t *testing.T, fa, fb Factory, alg algo.Algorithm, seed int64, steps int) error {
	start := startFor(seed)
	ha, hb := newHarness(t, fa, start), newHarness(t, fb, start)
	g := newGen(seed, alg, true)
	var grants []grantRef
	var history []diffOp
	for i := 0; i < steps; i++ {
		d := g.step()
		ha.clk.Add(d)
		hb.clk.Add(d)
		op := diffOp{step: i, now: ha.clk.Now(), key: diffKeys[g.r.Intn(len(diffKeys))]}
		var mismatch bool
		switch p := g.r.Intn(100); {
		case p < 6 && len(grants) > 0:
			gr := grants[g.r.Intn(len(grants))]
			if g.r.Intn(2) == 0 {
				// The latest grant: the buckets give back all of it (and roll back when
				// the next grant before it acts), while an earlier one gives back only
				// what was not reserved after it, often nothing.
				gr = grants[len(grants)-1]
			}
			gr.n = 1 + g.r.Int63n(gr.n)
			op.refund, op.key = &gr, gr.key
			op.ea = ha.s.Refund(ha.ctx, gr.key, alg, gr.n, gr.at)
			op.eb = hb.s.Refund(hb.ctx, gr.key, alg, gr.n, gr.at)
			mismatch = (op.ea == nil) != (op.eb == nil)
		default:
			op.req = g.request()
			if p == 99 {
				op.req.N = -g.r.Int63n(2) // invalid: both must fail
			}
			op.da, op.ea = ha.s.Apply(ha.ctx, op.key, alg, op.req)
			op.db, op.eb = hb.s.Apply(hb.ctx, op.key, alg, op.req)
			mismatch = (op.ea == nil) != (op.eb == nil) || (op.ea == nil && op.da != op.db)
			if op.ea == nil && op.da.Allowed {
				grants = append(grants, grantRef{key: op.key, n: op.req.N, at: op.da.At})
			}
		}
		if mismatch {
			return diffReport(alg, seed, op, history)
		}
		history = append(history, op)
	}
	return nil
}

// diffReport describes the first difference and the operations on the same key before it.
func diffReport(alg algo.Algorithm, seed int64, op diffOp, history []diffOp) error {
	key := op.key
	var same []diffOp
	for i := len(history) - 1; i >= 0 && len(same) < 12; i-- {
		if history[i].key == key {
			same = append(same, history[i])
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%v, seed %d: the stores differ at step %d:\n  %v\n", alg, seed, op.step, op)
	fmt.Fprintf(&b, "the last %d operations on key %q before it, latest last:\n", len(same), key)
	for i := len(same) - 1; i >= 0; i-- {
		fmt.Fprintf(&b, "  %v\n", same[i])
	}
	return errors.New(b.String())
}
