package limiter

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/nilcheck"
	"github.com/ratekit/limiter/internal/storeclock"
	"github.com/ratekit/limiter/store"
)

// Decision is the answer to a request for permits; see algo.Decision for its fields. A
// denial is a Decision with Allowed false, never an error.
type Decision = algo.Decision

// Limiter applies one algorithm to keyed state in a store: each key has its own limit.
// Make one with New, or combine several with All. It is safe for concurrent use and holds
// no lock while it calls the store or sleeps. A zero or nil Limiter answers every call with
// an error wrapping algo.ErrInvalidConfig.
type Limiter struct {
	rule               // the decider of one rule (rule.go); zero for a composite
	set   *ruleSet     // the decider of a composite made by All (ruleset.go); nil for one rule
	clock clockx.Clock // what Wait, TryAcquire and Reservations sleep on
}

// unmade reports a Limiter not made by New or All: nil, or the zero value.
func (l *Limiter) unmade() bool {
	return l == nil || (l.store == nil && l.set == nil)
}

// algoBox lets an atomic.Pointer hold an interface value.
type algoBox struct {
	a algo.Algorithm
}

// New returns a Limiter applying a to keys in s. It returns an error wrapping
// algo.ErrInvalidConfig, naming the input, for a nil s, a nil or invalid a, or an invalid
// option. Closing s stays the caller's business.
func New(s store.Store, a algo.Algorithm, opts ...Option) (*Limiter, error) {
	if nilcheck.Nil(s) { // a typed nil (*local.Store)(nil) too: it would panic on first use
		return nil, fmt.Errorf("%w: store is nil", algo.ErrInvalidConfig)
	}
	if err := checkAlgorithm(a); err != nil {
		return nil, err
	}
	o := defaultOptions()
	o.clock = storeclock.Of(s) // sleep on the store's time unless WithClock says otherwise
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	l := &Limiter{
		rule: rule{
			store:   s,
			policy:  o.policy,
			timeout: o.timeout,
			onError: o.errorHandler,
			keyFn:   o.keyFn,
			obs:     o.observer,
			shadow:  o.shadow,
		},
		clock: o.clock,
	}
	if !o.breaker.Off {
		l.breaker = newBreaker(o.breaker, o.clock)
		l.breaker.obs = o.observer
	}
	// An observed or shadow rule runs its pipeline (settle tells the observer), never the
	// fast path.
	l.direct = l.timeout <= 0 && !l.noted()
	l.alg.Store(&algoBox{a: a})
	return l, nil
}

func checkAlgorithm(a algo.Algorithm) error {
	if a == nil {
		return fmt.Errorf("%w: algorithm is nil", algo.ErrInvalidConfig)
	}
	return a.Validate()
}

// SetAlgorithm replaces the algorithm atomically, for example to change a rate at run
// time; it returns algo.ErrInvalidConfig, changing nothing, for a nil or invalid a or a
// composite. Keys keep their state when a's Slot is the old one's (admitting no more than
// golang.org/x/time/rate's SetLimit and SetBurst would, but for a key whose state was
// already fresh under the old config, which starts fresh, so full, under a), else start
// fresh (docs/algorithms.md, "Config changes" and "Expiry across a config change").
func (l *Limiter) SetAlgorithm(a algo.Algorithm) error {
	if l.unmade() {
		return errUnmade
	}
	if l.set != nil {
		return fmt.Errorf("%w: SetAlgorithm on a composite made by All: set it on one of its rules", algo.ErrInvalidConfig)
	}
	if err := checkAlgorithm(a); err != nil {
		return err
	}
	l.alg.Store(&algoBox{a: a})
	return nil
}

// Algorithm returns the algorithm the limiter applies now. A composite made by All has no
// single algorithm: it returns nil (see Rules).
func (l *Limiter) Algorithm() algo.Algorithm {
	if l == nil {
		return nil
	}
	if b := l.alg.Load(); b != nil {
		return b.a
	}
	return nil
}

// Rules returns the rules of a composite made by All, in the order they are applied, and
// nil for any other Limiter.
func (l *Limiter) Rules() []*Limiter {
	if l == nil || l.set == nil {
		return nil
	}
	return append([]*Limiter(nil), l.set.rules...)
}

// Allow reports whether one permit for key is available now, and takes it if so. It is
// AllowN(ctx, key, 1).
func (l *Limiter) Allow(ctx context.Context, key string) (Decision, error) {
	var d Decision
	err := l.allow(ctx, key, 1, &d)
	return d, err
}

// AllowN reports whether n permits for key are available now, and takes them if so; it
// never waits. A denial has RetryAfter (algo.Never if n exceeds what the algorithm ever
// grants). It returns algo.ErrInvalidRequest for n ≤ 0, store.ErrInvalidKey for an empty key,
// and when the store is unavailable the failure policy's Decision with the store error
// (under FailOpen an allowed Decision with a non-nil error).
func (l *Limiter) AllowN(ctx context.Context, key string, n int64) (Decision, error) {
	// allow checks n and l: this one call keeps AllowN small enough to be inlined, and the
	// Decision it writes through &d reaches the caller without a struct copy.
	var d Decision
	err := l.allow(ctx, key, n, &d)
	return d, err
}

// Allow, Reserve, WaitN and TryAcquire are written once, over decide: one rule runs its
// pipeline (rule.go; Allow's fast path is allow's, below), a rule set made by All runs
// every rule's, all or nothing (ruleset.go, tally.go). A store failure is answered by the
// failure policy (rule.onFailure) before decide returns, so the methods see a Decision,
// what it holds (outcome), and errors.

// allow is AllowN writing its Decision to *d: Allow and AllowN, inlined into their caller,
// then hand it over without a struct copy of a Decision just returned in registers, which
// the compiler makes with 16-byte loads that stall on the 8-byte stores they read (~6 ns a
// call boundary). It is the one fast path: the store straight
// away when there is no timeout, no observer or shadow (direct) and the breaker is clean
// (closed, no failure counted: a success has nothing to record). Every other case goes
// through decide.
func (l *Limiter) allow(ctx context.Context, key string, n int64, d *Decision) error {
	if n > 0 && l != nil && l.direct && (l.breaker == nil || l.breaker.clean()) {
		if b := l.alg.Load(); b != nil {
			key = l.keyFor(key)
			var err error
			*d, err = l.store.Apply(ctx, key, b.a, algo.Request{N: n})
			if err != nil {
				return l.failed(ctx, key, b.a, n, d, err)
			}
			return nil
		}
	}
	var err error
	*d, err = l.decide(ctx, key, request{N: n}, nil)
	return err
}

// failed ends allow's store call that failed with err: the breaker and the failure
// policy answer it, as settle does for the pipeline.
func (l *Limiter) failed(ctx context.Context, key string, a algo.Algorithm, n int64, d *Decision, err error) error {
	err = classify(ctx, err)
	l.record(key, err, false)
	*d, err = l.settle(ctx, key, a, request{N: n}, nil, Decision{}, 0, err)
	return err
}

// decide answers q for key: an error is the request's failure (its Decision is then
// denied, or the Fallback's), with o.refused set when the failure policy refused it.
// Allow passes no outcome (o nil): a store failure that FailOpen or Fallback answered then
// comes back as the error beside the Decision, as AllowN returns it.
//
// One rule's healthy Allow never gets here: allow takes it straight to the store.
func (l *Limiter) decide(ctx context.Context, key string, q request, o *outcome) (Decision, error) {
	// AllowN leaves its checks to decide, so that it is small enough to be inlined.
	if q.N <= 0 {
		return Decision{}, invalidN(q.N)
	}
	if l == nil {
		return Decision{}, errUnmade
	}
	b := l.alg.Load()
	if b == nil {
		// Only a rule set and a Limiter not made by New have no algorithm: this one nil
		// comparison keeps both off the path of one rule.
		if l.set != nil {
			return l.set.run(ctx, key, q, o)
		}
		return Decision{}, errUnmade
	}
	return l.rule.run(ctx, l.keyFor(key), b.a, q, o)
}

// Reserve asks for n permits of key usable within maxWait (algo.Forever: no bound;
// negative: 0) and, when granted, commits them so later requests queue behind; Delay says
// when to use them. Nothing is taken when it is not OK. It returns algo.ErrInvalidRequest for
// n ≤ 0 with a nil Reservation; when the store is unavailable, the failure policy's
// Reservation with the store error.
func (l *Limiter) Reserve(ctx context.Context, key string, n int64, maxWait time.Duration) (*Reservation, error) {
	if n <= 0 {
		return nil, invalidN(n)
	}
	if l.unmade() {
		return nil, errUnmade
	}
	var o outcome
	d, err := l.decide(ctx, key, request{N: n, MaxWait: max(maxWait, 0)}, &o)
	switch {
	case o.refused:
		return l.reservation(n, Decision{}, &o), err
	case err != nil:
		return nil, err
	}
	return l.reservation(n, d, &o), o.soft
}

// reservation records a granted or denied outcome of l as a Reservation timed on the clock
// of the limiter that answered (a rule set's: its first rule's).
func (l *Limiter) reservation(n int64, d Decision, o *outcome) *Reservation {
	h := o.holder(l)
	r := &Reservation{clock: h.clock, key: o.key, alg: o.alg, n: n, d: d, readyAt: h.clock.Now()}
	if d.Allowed {
		r.readyAt = r.readyAt.Add(d.Wait)
		if o.holds() {
			r.lim, r.parts = h, o.parts
		}
	}
	return r
}

// Wait is WaitN(ctx, key, 1).
func (l *Limiter) Wait(ctx context.Context, key string) error {
	return l.WaitN(ctx, key, 1)
}

// WaitN blocks, on the limiter's clock, until n permits for key are granted, holding no
// lock while it sleeps. It reserves only a wait that ends before ctx's deadline, and
// otherwise returns ErrWouldExceedDeadline at once; a denial that waiting can fix (a full
// LeakyBucket queue) is slept on and asked again.
//
// The blocking calls (WaitN, TryAcquire) follow one rule: they succeed (nil, true) only
// with the permits granted and usable now; every other return holds nothing (what was
// reserved is given back). The error says why: algo.ErrInvalidRequest (n ≤ 0), ErrExceedsLimit
// (never grantable), ErrWouldExceedDeadline, ctx.Err() (ctx ended), or the store failure
// under FailClosed. Under FailOpen they succeed at once, the failure going to the error
// handler only; under Fallback(l2) they wait for what l2 grants. TryAcquire's (false, nil)
// alone is no error, a refusal: the permits would come later than its timeout or the
// deadline.
func (l *Limiter) WaitN(ctx context.Context, key string, n int64) error {
	if n <= 0 {
		return invalidN(n)
	}
	if l.unmade() {
		return errUnmade
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		maxWait := algo.Forever
		deadline, hasDeadline := ctx.Deadline()
		if hasDeadline {
			// A context deadline is real time, whatever clock the limiter sleeps on.
			maxWait = max(0, time.Until(deadline))
		}
		var o outcome
		d, err := l.decide(ctx, key, request{N: n, MaxWait: maxWait}, &o)
		switch {
		case err != nil:
			return err
		case d.Allowed:
			return l.sleep(ctx, l.reservation(n, d, &o))
		case d.RetryAfter == algo.Never:
			return exceeds(o.key, n, d.Limit)
		case hasDeadline:
			return fmt.Errorf("%w: key %q: n=%d cannot be granted within %v (retry after %v)",
				ErrWouldExceedDeadline, o.key, n, maxWait, d.RetryAfter)
		}
		if err := o.holder(l).clock.Sleep(ctx, max(d.RetryAfter, time.Microsecond)); err != nil {
			return err
		}
	}
}

// sleep waits for a granted reservation; if ctx ends first it gives the permits back and
// returns ctx.Err().
func (l *Limiter) sleep(ctx context.Context, r *Reservation) error {
	if err := r.Wait(ctx); err != nil {
		// ctx is done, but the refund must still reach the store, also when the permits'
		// time came as ctx ended: the caller did not get them. A failed refund is reported
		// to the error handler; the caller's error is its context's.
		_ = r.abandon(ctx)
		return err
	}
	return nil
}

// TryAcquire takes n permits for key if they are available now or within timeout
// (negative: 0) and before ctx's deadline, sleeping until they are usable: Guava's
// tryAcquire. It returns (false, nil) at once, taking nothing, when they would come later.
// Its other results follow WaitN's rule.
func (l *Limiter) TryAcquire(ctx context.Context, key string, n int64, timeout time.Duration) (bool, error) {
	if n <= 0 {
		return false, invalidN(n)
	}
	if l.unmade() {
		return false, errUnmade
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	maxWait := max(timeout, 0)
	if deadline, ok := ctx.Deadline(); ok {
		maxWait = min(maxWait, max(0, time.Until(deadline)))
	}
	var o outcome
	d, err := l.decide(ctx, key, request{N: n, MaxWait: maxWait}, &o)
	switch {
	case err != nil:
		return false, err
	case d.Allowed:
		if err := l.sleep(ctx, l.reservation(n, d, &o)); err != nil {
			return false, err
		}
		return true, nil
	case d.RetryAfter == algo.Never:
		return false, exceeds(o.key, n, d.Limit)
	default:
		return false, nil
	}
}

// Peek reports what Allow(ctx, key) would answer now, taking nothing, creating no state and
// moving no expiry; its Remaining is what the key has now, before that Allow. A composite
// peeks its rules in Allow's order and combines them as Allow does (not at one instant);
// in shadow mode, as Allow, it answers allowed with the rule's real figures.
// Peek and Reset are for operators: no failure policy, breaker or error handler; a store
// failure is returned (wrapping store.ErrUnavailable), and a store without store.Admin gives
// store.ErrUnsupported. WithTimeout bounds each call.
func (l *Limiter) Peek(ctx context.Context, key string) (Decision, error) {
	if l.unmade() {
		return Decision{}, errUnmade
	}
	if l.set != nil {
		return l.set.peek(ctx, key)
	}
	return l.rule.peek(ctx, l.keyFor(key), l.alg.Load().a, algo.Request{N: 1})
}

// Reset forgets the state of key (for a composite, every rule's at its key), so that its
// next request is answered as a new key's; other algorithm slots are left alone. It is one
// atomic call per store and key; a composite resets all of them even when one fails and
// returns the failures joined. A concurrent request is decided before or after it, never
// on a mix. Errors as Peek's.
//
// A Cancel of a reservation (or any refund) of a grant acting before the Reset gives the
// new state nothing: the stores mark the Reset (store.Admin). A reservation still queued
// at the Reset acts after it, on permits the new state never counted; its Cancel gives
// the new state at most those permits instead, so the key admits no more than without
// the Cancel. Cancel such reservations before resetting the key to have the new state
// start alone.
func (l *Limiter) Reset(ctx context.Context, key string) error {
	if l.unmade() {
		return errUnmade
	}
	if l.set != nil {
		return l.set.reset(ctx, key)
	}
	return l.rule.reset(ctx, l.keyFor(key), l.alg.Load().a)
}
