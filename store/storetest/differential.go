package storetest

import (
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/store"
)

// DiffOptions configures Differential.
type DiffOptions struct {
	// Steps is the number of random operations per algorithm; 0 means 2000.
	Steps int
	// Seed seeds the random sequence; the seed of each algorithm's sequence is derived from
	// it and printed on failure. 0 means 1.
	Seed int64
	// Algorithms are the configs to drive; nil means algo.Samples().
	Algorithms []algo.Algorithm
	// Admin mixes store.Admin's calls into the sequence (both stores must implement it):
	// a Peek before about a third of the requests, half of them with the request itself
	// (then the Apply right after must answer the same), and now and then a Reset of the
	// key. The other operations are drawn as without Admin, from the same seed.
	Admin bool
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
		algs = algo.Samples()
	}
	for i, alg := range algs {
		seed := opts.Seed*1_000_003 + int64(i)
		t.Run(fmt.Sprintf("%d:%v", i, alg), func(t *testing.T) {
			t.Parallel()
			if err := diffRun(t, a, b, alg, seed, opts.Steps, opts.Admin); err != nil {
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
	admin  string    // "peek" or "reset" for a store.Admin call
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
	switch o.admin {
	case "peek":
		return fmt.Sprintf("step %d at %s (%d µs): Peek(%q, %s)\n    a: %s error %v\n    b: %s error %v",
			o.step, when, o.now.UnixMicro(), o.key, reqString(o.req), describe(o.da), o.ea, describe(o.db), o.eb)
	case "reset":
		return fmt.Sprintf("step %d at %s (%d µs): Reset(%q)\n    a: error %v\n    b: error %v",
			o.step, when, o.now.UnixMicro(), o.key, o.ea, o.eb)
	}
	if o.refund != nil {
		return fmt.Sprintf("step %d at %s (%d µs): Refund(%q, n=%d, at=%d)\n    a: error %v\n    b: error %v",
			o.step, when, o.now.UnixMicro(), o.refund.key, o.refund.n, o.refund.at, o.ea, o.eb)
	}
	return fmt.Sprintf("step %d at %s (%d µs): Apply(%q, %s)\n    a: %s error %v\n    b: %s error %v",
		o.step, when, o.now.UnixMicro(), o.key, reqString(o.req), describe(o.da), o.ea, describe(o.db), o.eb)
}

// diffRun plays one algorithm's sequence on a fresh pair of stores and describes the
// first difference, with the operations on its key before it.
func diffRun(t *testing.T, fa, fb Factory, alg algo.Algorithm, seed int64, steps int, admin bool) error {
	start := startFor(seed)
	ha, hb := newHarness(t, fa, start), newHarness(t, fb, start)
	g := newGen(seed, alg, true)
	var adm *diffAdmin
	if admin {
		var err error
		if adm, err = newDiffAdmin(ha, hb, alg, seed); err != nil {
			return err
		}
	}
	var grants []grantRef
	var history []diffOp
	for i := 0; i < steps; i++ {
		d := g.step()
		ha.clk.Add(d)
		hb.clk.Add(d)
		op := diffOp{step: i, now: ha.clk.Now(), key: diffKeys[g.r.Intn(len(diffKeys))]}
		if adm != nil {
			ops, bad := adm.before(i, op)
			if bad != nil {
				return diffReport(alg, seed, *bad, history)
			}
			history = append(history, ops...)
		}
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
			var peeked *diffOp
			if adm != nil {
				if peeked = adm.peekFirst(i, op); peeked != nil {
					if peeked.mismatch() {
						return diffReport(alg, seed, *peeked, history)
					}
					history = append(history, *peeked)
				}
			}
			op.da, op.ea = ha.s.Apply(ha.ctx, op.key, alg, op.req)
			op.db, op.eb = hb.s.Apply(hb.ctx, op.key, alg, op.req)
			mismatch = op.mismatch()
			if !mismatch && peeked != nil && peeked.ea == nil && (op.ea != nil || peekMismatch(peeked.da, op.req, true, op.da) != "") {
				return fmt.Errorf("%v, seed %d: at step %d Peek answered %s but the Apply right after it:\n  %v",
					alg, seed, i, describe(peeked.da), op)
			}
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

// mismatch reports whether the two stores disagree on o: one failed and not the other, or
// both answered with different decisions.
func (o diffOp) mismatch() bool {
	return (o.ea == nil) != (o.eb == nil) || (o.ea == nil && o.da != o.db)
}

// diffAdmin draws the store.Admin calls of a differential run from a source of its own,
// so that the other operations are those of the same seed without Admin.
type diffAdmin struct {
	r      *rand.Rand
	a, b   store.Admin
	ha, hb *harness
	alg    algo.Algorithm
}

func newDiffAdmin(ha, hb *harness, alg algo.Algorithm, seed int64) (*diffAdmin, error) {
	a, okA := ha.s.(store.Admin)
	b, okB := hb.s.(store.Admin)
	if !okA || !okB {
		return nil, fmt.Errorf("DiffOptions.Admin: %T or %T does not implement store.Admin", ha.s, hb.s)
	}
	return &diffAdmin{r: rand.New(rand.NewSource(seed ^ 0xad1)), a: a, b: b, ha: ha, hb: hb, alg: alg}, nil
}

// before runs the admin calls before step i's operation on op.key: sometimes a Peek of
// one permit, rarely a Reset. It returns them, or the first on which the stores differ.
func (d *diffAdmin) before(i int, op diffOp) ([]diffOp, *diffOp) {
	var done []diffOp
	if d.r.Intn(6) == 0 {
		p := d.peek(i, op, algo.Request{N: 1})
		if p.mismatch() {
			return done, &p
		}
		done = append(done, p)
	}
	if d.r.Intn(40) == 0 {
		r := op
		r.admin = "reset"
		r.ea = d.a.Reset(d.ha.ctx, op.key, d.alg)
		r.eb = d.b.Reset(d.hb.ctx, op.key, d.alg)
		if (r.ea == nil) != (r.eb == nil) {
			return done, &r
		}
		done = append(done, r)
	}
	return done, nil
}

// peekFirst sometimes peeks with the request step i is about to apply (a valid one).
func (d *diffAdmin) peekFirst(i int, op diffOp) *diffOp {
	if op.req.N <= 0 || d.r.Intn(6) != 0 {
		return nil
	}
	p := d.peek(i, op, op.req)
	return &p
}

func (d *diffAdmin) peek(i int, op diffOp, req algo.Request) diffOp {
	p := op
	p.step, p.admin, p.req = i, "peek", req
	p.da, p.ea = d.a.Peek(d.ha.ctx, op.key, d.alg, req)
	p.db, p.eb = d.b.Peek(d.hb.ctx, op.key, d.alg, req)
	return p
}
