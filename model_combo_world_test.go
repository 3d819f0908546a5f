package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/store"
)

// comboWorld is one store stack of a combo with its own fake clock: one limiter per
// process (one rule, or a composite of two), and the histories of the permits granted,
// kept at the facade: what a caller got, at the instant it could use it. Leasing reports
// a local grant's At as its slice's, so the use instant is the later of At and the clock
// plus the Wait.
type comboWorld struct {
	name   string
	v      *comboVariant // nil: the reference
	clk    *clockx.Fake
	rules  comboRules
	keys   []string
	stores []store.Store // per process: the store its limiter calls (cRefund calls it too)
	lims   []*limiter.Limiter
	closes []func() error
	hist   map[string]*modelHistory // per rule and key ("a|key", "b|key"), since the last Reset
	resets map[string]int64         // per rule and key: the client's clock (µs) at its last Reset
	ceil   map[string]*modelCeiling // per rule ("a", "b"), widened by the variant's trade
	grants []comboGrant             // the Allow grants a cRefund may give back
	res    []comboRes               // OK reservations not yet cancelled
	lag    time.Duration            // how far the server's clock is ahead of the client's (cLag)
	ttl    *comboTTL                // the client-clock variant's emulated expiry; nil otherwise
	fault  func(b byte) error       // the variant's fault injection; nil: none
	bad    string                   // the key that holds the wrong type; "": none
	obs    *countObserver           // every limiter's observer; nil: none
	giveUp context.CancelFunc       // set: the limiters' clock cancels a wait with it (comboClock)
	// reconfig returns the plan's rules with config byte b (cSet); slack is the variant's
	// trade per rule, kept on top of the largest config's limit.
	reconfig func(b byte) comboRules
	slack    map[string]int64
}

// comboRef is one grant in one history: a composite's grant is in two.
type comboRef struct {
	hk string // the rule and key
	h  *modelHistory
	i  int
}

type comboGrant struct {
	proc  int
	key   string
	a     algo.Algorithm // the rule it was granted under (a cSet may change it since)
	n, at int64
	refs  []comboRef
}

type comboRes struct {
	r    *limiter.Reservation
	refs []comboRef
}

// comboObs is what a world observed in one step: in full, and only what was granted.
type comboObs struct{ full, granted string }

// refused reports an error of a config that does not validate.
func refused(err error) bool { return errors.Is(err, algo.ErrInvalidConfig) }

// newComboWorld builds the world of variant v (nil: the reference, one local store per
// rule) for plan p.
func newComboWorld(env *comboEnv, p *comboPlan, rules comboRules, v *comboVariant, prefix string) (*comboWorld, error) {
	w := &comboWorld{name: "reference", v: v, clk: clockx.NewFake(modelStart), rules: rules, keys: p.c.keys,
		hist: map[string]*modelHistory{}, resets: map[string]int64{}, ceil: map[string]*modelCeiling{},
		slack: map[string]int64{}}
	w.reconfig = func(b byte) comboRules {
		q := *p
		q.first = b
		return p.c.rules(&q)
	}
	// The reference's rules never meet: the second rule is Named, so its state has a slot
	// of its own. Both rules stay on one store and use the same keys, so that the reference
	// decides through the same paths as a variant with one store (one atomic ApplyAll when
	// the keys are equal; two stores would decide one rule after the other and refund,
	// which a fixed window's queued grant cannot undo exactly: a difference of paths, not
	// of keys).
	ruleB := rules.b
	if v == nil {
		w.stores = []store.Store{newComboLocal(w.clk)}
		if ruleB != nil {
			ruleB = algo.Named(ruleB, "reference")
		}
	} else {
		w.name = v.name
		var err error
		if w.stores, err = v.stores(env, p, w, prefix); err != nil {
			w.close()
			return nil, err
		}
	}
	for _, s := range w.stores {
		w.closes = append(w.closes, s.Close)
	}
	for _, s := range w.stores {
		opts := []limiter.Option{limiter.WithClock(comboClock{w.clk, w})}
		if v != nil && v.observe {
			if w.obs == nil {
				w.obs = &countObserver{}
			}
			opts = append(opts, limiter.WithObserver(w.obs), limiter.WithTimeout(time.Minute))
		}
		if rules.b == nil {
			l, err := limiter.New(s, rules.a, opts...)
			if err != nil {
				w.close()
				return nil, err
			}
			w.lims = append(w.lims, l)
			continue
		}
		userOpts := append(opts, limiter.WithKeyFunc(comboUser))
		if rules.shadowA {
			userOpts = append(userOpts, limiter.WithShadow())
		}
		user, err := limiter.New(s, rules.a, userOpts...)
		if err != nil {
			w.close()
			return nil, err
		}
		endpoint, err := limiter.New(s, ruleB, append(opts, limiter.WithKeyFunc(comboEndpoint))...)
		if err != nil {
			w.close()
			return nil, err
		}
		all, err := limiter.All(user, endpoint)
		if err != nil {
			w.close()
			return nil, err
		}
		w.lims = append(w.lims, all)
	}
	for rule, bound := range map[string]algo.Algorithm{"a": rules.boundA, "b": rules.boundB} {
		if bound == nil {
			continue // one rule
		}
		if v != nil && v.slack != nil {
			w.slack[rule] = v.slack(p, bound) // each rule of a composite is leased on its own
		}
		w.ceil[rule] = &modelCeiling{}
		w.ceil[rule].add(bound)
		w.ceil[rule].limit += w.slack[rule]
		// Each process's leases hold slices that another's charge cannot take.
		w.ceil[rule].blind = w.slack[rule] != 0 && len(w.stores) > 1
	}
	if v != nil && v.setup != nil {
		if err := v.setup(env, w, prefix); err != nil {
			w.close()
			return nil, err
		}
	}
	return w, nil
}

// comboClock is a world's clock as its limiters see it: while a step sets w.giveUp, a
// wait (a Sleep of more than 0) is given up: the caller's context ends as it starts, the
// clock stays where it is.
type comboClock struct {
	*clockx.Fake
	w *comboWorld
}

func (c comboClock) Sleep(ctx context.Context, d time.Duration) error {
	if c.w.giveUp != nil && d > 0 {
		c.w.giveUp()
	}
	return c.Fake.Sleep(ctx, d)
}

// comboUser and comboEndpoint split "user|endpoint", the composite's key: a user may be
// named like an endpoint.
func comboUser(k string) string     { u, _, _ := strings.Cut(k, "|"); return u }
func comboEndpoint(k string) string { _, e, _ := strings.Cut(k, "|"); return e }

func (w *comboWorld) close() {
	for _, c := range w.closes {
		_ = c()
	}
}

// histKeys returns the histories a request on key counts in: one per rule.
func (w *comboWorld) histKeys(key string) []string {
	if w.rules.b == nil {
		return []string{"a|" + key}
	}
	return []string{"a|" + comboUser(key), "b|" + comboEndpoint(key)}
}

// record adds a grant of n usable at use (µs), made at step, to key's histories.
func (w *comboWorld) record(step int, key string, n, use int64) []comboRef {
	return w.recordEach(step, key, n, use, nil)
}

// counted notes on the grants refs that process proc made them, its store counting the
// permits at at (µs; a leased grant's slice At; 0: when used), with one rule (see
// modelCeiling.blind); it returns refs.
func (w *comboWorld) counted(refs []comboRef, proc int, at int64) []comboRef {
	for _, r := range refs {
		g := &r.h.grants[r.i]
		g.proc = proc
		if w.rules.b == nil {
			g.counted = at
		}
	}
	return refs
}

// recordEach is record with each rule's own instant where rules (the composite's rules'
// decisions, in order, from limiter.TraceRules) has one per history: a rule whose wait
// was shorter than the composite's placed its permits at its own At, and bounds only
// what it placed (docs/composite.md: requests reserved on it at different instants may
// act together).
func (w *comboWorld) recordEach(step int, key string, n, use int64, rules []algo.Decision) []comboRef {
	return w.recordFrom(step, key, n, use, rules, w.clk.Now().UnixMicro())
}

// recordFrom is recordEach for rules decided at the instant base (µs).
func (w *comboWorld) recordFrom(step int, key string, n, use int64, rules []algo.Decision, base int64) []comboRef {
	var refs []comboRef
	hks := w.histKeys(key)
	for i, hk := range hks {
		at := use
		if len(rules) == len(hks) {
			at = useFrom(rules[i], base)
		}
		h := w.hist[hk]
		if h == nil {
			h = &modelHistory{}
			w.hist[hk] = h
		}
		h.grants = append(h.grants, modelGrant{step: step, n: n, at: at})
		refs = append(refs, comboRef{hk, h, len(h.grants) - 1})
	}
	return refs
}

// unuse marks a grant as not used: it was given back (whatever the store made of it).
func unuse(refs []comboRef) {
	for _, r := range refs {
		r.h.grants[r.i].cancelled = true
	}
}

// useAt is the instant (µs) the permits of a granted d may be used.
func (w *comboWorld) useAt(d algo.Decision) int64 { return useFrom(d, w.clk.Now().UnixMicro()) }

// useFrom is the instant (µs) the permits of d, granted at the instant base, may be used.
func useFrom(d algo.Decision, base int64) int64 {
	wait := int64((d.Wait + time.Microsecond - 1) / time.Microsecond)
	return max(d.At, base+wait)
}

// errOK reports whether err is an answer the world may give: an outage its variant
// injects, answered by the failure policy (FailClosed: nothing granted).
func (w *comboWorld) errOK(err error) bool {
	return w.fault != nil && errors.Is(err, store.ErrUnavailable)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return " err"
}

// observedSince returns a func that reports whether the observer was told of a decision
// since: always true without one.
func (w *comboWorld) observedSince() func() bool {
	if w.obs == nil {
		return func() bool { return true }
	}
	n := w.obs.n.Load()
	return func() bool { return w.obs.n.Load() > n }
}

// do runs one step.
func (w *comboWorld) do(step int, o comboOp) (comboObs, error) {
	ctx := context.Background()
	proc := o.proc % len(w.lims)
	lim, key := w.lims[proc], w.keys[o.key]
	if w.ttl != nil {
		if err := w.ttl.expire(ctx, w.serverNow()); err != nil {
			return comboObs{}, err
		}
		defer func() {
			if err := w.ttl.scan(ctx, w.serverNow()); err != nil {
				panic(fmt.Sprintf("model TTL scan: %v", err)) // a broken test Redis, not a finding
			}
		}()
	}
	for hk, h := range w.hist {
		rule, _, _ := strings.Cut(hk, "|")
		w.ceil[rule].observe(hk, h, w.clk.Now().UnixMicro())
	}
	var obs comboObs
	switch o.kind {
	case cSet:
		r := w.reconfig(o.b)
		for _, l := range w.lims {
			if err := setRules(l, r, w.v == nil); err != nil {
				return obs, err
			}
		}
		w.rules = r
		w.changed("a", r.boundA, step)
		if r.b != nil {
			w.changed("b", r.boundB, step)
		}
		obs = comboObs{fmt.Sprintf("set %v / %v", r.a, r.b), "set"}
	case cAllow:
		seen := w.observedSince()
		d, err := lim.AllowN(ctx, key, o.n)
		if err != nil && !w.errOK(err) {
			return obs, fmt.Errorf("AllowN: %w", err)
		}
		if !seen() {
			return obs, fmt.Errorf("AllowN answered %s, and the observer was told of nothing", fmtDecision(d))
		}
		if d.Allowed && err == nil {
			refs := w.counted(w.record(step, key, o.n, w.useAt(d)), proc, d.At)
			if w.rules.b == nil {
				w.grants = append(w.grants, comboGrant{proc: proc, key: key, a: w.rules.a, n: o.n, at: d.At, refs: refs})
			}
		}
		obs = comboObs{fmtDecision(d) + errText(err), fmt.Sprintf("ok=%v%s", d.Allowed, errText(err))}
	case cCharge:
		seen := w.observedSince()
		d, err := lim.Charge(ctx, key, o.n)
		if err != nil && !w.errOK(err) {
			return obs, fmt.Errorf("Charge: %w", err)
		}
		if !seen() {
			return obs, fmt.Errorf("Charge answered %s, and the observer was told of nothing", fmtDecision(d))
		}
		if err == nil {
			if !d.Allowed {
				return obs, fmt.Errorf("Charge(%d) denied: %s", o.n, fmtDecision(d))
			}
			// Charged now (a lease's At is its slice's), behind the grants already queued.
			at := max(d.At, w.clk.Now().UnixMicro())
			for _, hk := range w.histKeys(key) {
				h := w.hist[hk]
				if h == nil {
					h = &modelHistory{}
					w.hist[hk] = h
				}
				h.charged(step, proc, o.n, at)
			}
		}
		obs = comboObs{fmtDecision(d) + errText(err), fmt.Sprintf("charged%s", errText(err))}
	case cReserve:
		var rules []algo.Decision
		tctx := limiter.TraceRules(ctx, func(_ *limiter.Limiter, d limiter.Decision) { rules = append(rules, d) })
		seen := w.observedSince()
		r, err := lim.Reserve(tctx, key, o.n, o.d)
		if err != nil && !w.errOK(err) {
			return obs, fmt.Errorf("Reserve: %w", err)
		}
		if !seen() {
			return obs, errors.New("Reserve answered, and the observer was told of nothing")
		}
		ok := r != nil && r.OK() && err == nil
		if ok {
			refs := w.counted(w.recordEach(step, key, o.n, w.useAt(r.Decision()), rules), proc, r.Decision().At)
			w.res = append(w.res, comboRes{r, refs})
			obs.full = fmt.Sprintf("ok delay=%v %s", r.Delay(), fmtDecision(r.Decision()))
		} else {
			obs.full = "not ok" + errText(err)
		}
		obs.granted = fmt.Sprintf("ok=%v", ok)
	case cWait:
		// TryAcquire sleeps on the limiter's clock, which a fake clock does by moving at
		// once: the permits are used when it returns (a composite's rules, each at its own
		// instant, as for a reservation). With o.b&8 the caller gives up while it waits
		// (comboClock): what it reserved goes back, and it uses nothing. With o.b&16 it is
		// WaitN instead.
		var rules []algo.Decision
		tctx := limiter.TraceRules(ctx, func(_ *limiter.Limiter, d limiter.Decision) { rules = append(rules, d) })
		tctx, cancel := context.WithCancel(tctx)
		defer cancel()
		if o.b&8 != 0 {
			w.giveUp = cancel
		}
		seen := w.observedSince()
		pre := w.clk.Now().UnixMicro()
		var ok bool
		var err error
		name := "wait"
		if o.b&16 != 0 {
			// WaitN, with no deadline: it waits as long as the permits take, retrying a
			// denial after its RetryAfter; its rules' decisions are those of its last try.
			name = "waitN"
			err = lim.WaitN(tctx, key, o.n)
			ok = err == nil
			rules = rules[max(0, len(rules)-len(w.histKeys(key))):]
		} else {
			ok, err = lim.TryAcquire(tctx, key, o.n, o.d)
		}
		w.giveUp = nil
		switch {
		case errors.Is(err, limiter.ErrExceedsLimit):
			err = nil // an answer: never grantable (the reference's and the variant's agree on it)
			obs.full = "exceeds "
		case errors.Is(err, context.Canceled) && o.b&8 != 0 && tctx.Err() != nil:
			err = nil // the caller gave up while it waited
			obs.full = "gave up, "
		case err != nil && !w.errOK(err):
			return obs, fmt.Errorf("TryAcquire: %w", err)
		}
		if !seen() {
			return obs, errors.New("TryAcquire answered, and the observer was told of nothing")
		}
		post := w.clk.Now().UnixMicro()
		if ok && err == nil {
			w.counted(w.recordFrom(step, key, o.n, post, rules, pre), proc, 0)
		}
		obs = comboObs{fmt.Sprintf("%s%s ok=%v slept=%dµs%s", obs.full, name, ok, post-pre, errText(err)), fmt.Sprintf("%s%s ok=%v%s", obs.full, name, ok, errText(err))}
	case cCancel:
		i := w.pick(o.b, len(w.res), func(i int) []comboRef { return w.res[i].refs })
		if i < 0 {
			return comboObs{"no reservation", "no reservation"}, nil
		}
		r := w.res[i]
		w.res = slices.Delete(w.res, i, i+1)
		delay := r.r.Delay()
		if delay > 0 { // from its instant on, Cancel gives nothing back: the permits count as used
			unuse(r.refs)
		}
		if err := r.r.Cancel(ctx); err != nil && !w.errOK(err) {
			return obs, fmt.Errorf("Cancel: %w", err)
		}
		obs = comboObs{fmt.Sprintf("cancel #%d delay=%v", i, delay), fmt.Sprintf("cancel #%d", i)}
	case cRefund:
		i := w.pick(o.b, len(w.grants), func(i int) []comboRef { return w.grants[i].refs })
		if i < 0 {
			return comboObs{"no grant", "no grant"}, nil
		}
		g := w.grants[i]
		w.grants = slices.Delete(w.grants, i, i+1)
		unuse(g.refs) // the caller gives them back: whatever the call answers, they are not used
		err := w.stores[g.proc].Refund(ctx, g.key, g.a, g.n, g.at)
		if err != nil && !w.errOK(err) {
			return obs, fmt.Errorf("Refund: %w", err)
		}
		obs = comboObs{fmt.Sprintf("refund #%d%s", i, errText(err)), fmt.Sprintf("refund #%d", i)}
	case cReset:
		err := lim.Reset(ctx, key)
		if err != nil && !w.errOK(err) {
			return obs, fmt.Errorf("Reset: %w", err)
		}
		if err == nil {
			// A Reset forgets the key's grants: the bound holds again from here on.
			for _, hk := range w.histKeys(key) {
				w.hist[hk] = &modelHistory{}
				w.resets[hk] = w.clk.Now().UnixMicro()
			}
		}
		obs = comboObs{"reset" + errText(err), "reset"}
		if o.b%2 == 1 && w.rules.b == nil {
			// A request granted before the Reset fails after it and gives its permits back:
			// a Refund that must find nothing to give them to.
			for i := len(w.grants) - 1; i >= 0; i-- {
				if g := w.grants[i]; g.key == key {
					w.grants = slices.Delete(w.grants, i, i+1)
					unuse(g.refs)
					if err := w.stores[g.proc].Refund(ctx, g.key, g.a, g.n, g.at); err != nil && !w.errOK(err) {
						return obs, fmt.Errorf("Refund after Reset: %w", err)
					}
					obs.full += fmt.Sprintf(", refund of %d@%d", g.n, g.at)
					break
				}
			}
		}
	case cPeek:
		// What Allow would answer, on the reference too: a variant that agrees with it
		// agrees on its Peek, and every step after shows that it took nothing.
		d, err := lim.Peek(ctx, key)
		if err != nil && !w.errOK(err) {
			return obs, fmt.Errorf("Peek: %w", err)
		}
		obs = comboObs{"peek " + fmtDecision(d) + errText(err), fmt.Sprintf("peek ok=%v%s", d.Allowed, errText(err))}
	case cForward, cIdle:
		w.clk.Add(o.d)
		if w.ttl != nil && o.b&1 == 1 {
			// The client clock catches up (runs faster than the server's for a while), so
			// that later lag steps put it behind again.
			w.lag -= min(w.lag, o.d)
		}
	case cLag:
		if w.ttl == nil {
			break
		}
		w.lag = min(w.lag+o.d, modelClientLag)
	case cFault:
		if w.fault != nil {
			if err := w.fault(o.b); err != nil {
				return obs, err
			}
		}
		if w.bad != "" {
			// A client hammering the key that holds the wrong type: every call fails on
			// it, and must stay its own (healthy keys keep their answers).
			for range 3 + int(o.b%5) {
				d, err := lim.Allow(ctx, w.bad)
				if d.Allowed || err == nil || !errors.Is(err, store.ErrUnavailable) {
					return obs, fmt.Errorf("Allow on the key holding the wrong type: %s, %v", fmtDecision(d), err)
				}
			}
		}
		obs = comboObs{"fault", "fault"}
	}
	if obs.full == "" {
		obs = comboObs{"-", "-"}
	}
	now := fmt.Sprintf("; now=+%v", w.clk.Now().Sub(modelStart))
	return comboObs{obs.full + now, obs.granted + now}, nil
}

// pick returns the b-th (modulo) of the n grants that may be given back, or -1. A grant
// made before its key's last Reset may be given back only while nothing was granted on
// the key since: a Refund names a grant by its permits and instant, which a grant after
// the Reset may share (a window's count, a log's entries at one µs), so even the plain
// store then gives back permits the Reset already forgot. Right after a Reset the state
// holds nothing to give back to, and a Refund of a forgotten grant must add nothing.
// A grant used before the Reset (on the client's clock, which the server's is never
// behind) may be given back at any time: the stores drop the refund of a grant acting
// before a Reset (store.Admin.Reset), and once the Reset's mark has ended it can add
// nothing, which the bound checks. A grant made before and used after it (a reservation
// still queued) is the case the mark does not tell apart.
func (w *comboWorld) pick(b byte, n int, refs func(int) []comboRef) int {
	var ok []int
	for i := range n {
		if w.refundable(refs(i)) {
			ok = append(ok, i)
		}
	}
	if len(ok) == 0 {
		return -1
	}
	return ok[int(b)%len(ok)]
}

func (w *comboWorld) refundable(refs []comboRef) bool {
	for _, r := range refs {
		if cur := w.hist[r.hk]; cur != r.h && len(cur.grants) > 0 && r.h.grants[r.i].at >= w.resets[r.hk] {
			return false
		}
	}
	return true
}

// serverNow is the server's clock (µs) of the client-clock variant: the client's plus the
// real time that passed while the client's stood still.
func (w *comboWorld) serverNow() int64 { return w.clk.Now().Add(w.lag).UnixMicro() }

// checkBound returns "" or the first of the histories hks (rule and key) whose used grants
// break the bound.
func (w *comboWorld) checkBound(hks []string) string {
	for _, hk := range hks {
		h := w.hist[hk]
		if h == nil {
			continue
		}
		rule, _, _ := strings.Cut(hk, "|")
		if rule == "a" && w.rules.shadowA {
			continue // it lets every request through
		}
		if msg := w.ceil[rule].check(hk, h); msg != "" {
			return fmt.Sprintf("rule %s, key %q: %s", rule, hk[2:], msg)
		}
	}
	return ""
}

// setRules gives l the rules of r: its one rule, or a composite's two (the reference's
// second rule keeps its own slot, as newComboWorld made it).
func setRules(l *limiter.Limiter, r comboRules, reference bool) error {
	if r.b == nil {
		if err := l.SetAlgorithm(r.a); err != nil {
			return fmt.Errorf("SetAlgorithm(%v): %w", r.a, err)
		}
		return nil
	}
	rs, b := l.Rules(), r.b
	if reference {
		b = algo.Named(b, "reference")
	}
	for i, a := range []algo.Algorithm{r.a, b} {
		if err := rs[i].SetAlgorithm(a); err != nil {
			return fmt.Errorf("rule %d: SetAlgorithm(%v): %w", i+1, a, err)
		}
	}
	return nil
}

// changed records that rule's config is now a at step: the bound takes the largest of
// the configs so far, and the variant's trade on top.
func (w *comboWorld) changed(rule string, a algo.Algorithm, step int) {
	c := w.ceil[rule]
	c.limit -= w.slack[rule]
	c.changed(a, step)
	c.limit += w.slack[rule]
}
