package limiter

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/nilcheck"
	"github.com/ratekit/limiter/internal/storecheck"
	"github.com/ratekit/limiter/internal/storeclock"
	"github.com/ratekit/limiter/store"
)

// Decision is the answer to a request for permits; see algo.Decision for its fields. A
// denial is a Decision with Allowed false, never an error.
type Decision = algo.Decision

// Limiter applies rules to keyed state in stores: a Limiter made by New applies one
// algorithm to keys in one store, each key with its own limit; All combines several. Every
// call goes through one pipeline (pipeline.go). It is safe for concurrent use and holds no
// lock while it calls a store or sleeps. A zero or nil Limiter answers every call with an
// error wrapping algo.ErrInvalidConfig.
type Limiter struct {
	rules []*rule      // one for New, the flattened rules for All
	clock clockx.Clock // what Wait, TryAcquire and Reservations sleep on

	// A composite made by All only: which rules share a store, and each rule's algorithm
	// under its namespace (composite.go).
	storeID []int
	spaced  []atomic.Pointer[spacedBox]
}

// unmade reports a Limiter not made by New or All: nil, or the zero value.
func (l *Limiter) unmade() bool {
	return l == nil || len(l.rules) == 0
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
	r := &rule{
		store:   s,
		clock:   o.clock,
		policy:  o.policy,
		timeout: o.timeout,
		onError: o.errorHandler,
		keyFn:   o.keyFn,
		obs:     o.observer,
		shadow:  o.shadow,
	}
	if r.breaker = newBreaker(o.breaker, o.clock); r.breaker != nil {
		r.breaker.obs = o.observer
	}
	r.alg.Store(&algoBox{a: a})
	l := &Limiter{rules: []*rule{r}, clock: o.clock}
	r.lim = l
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
	if len(l.rules) > 1 {
		return fmt.Errorf("%w: SetAlgorithm on a composite made by All: set it on one of its rules", algo.ErrInvalidConfig)
	}
	if err := checkAlgorithm(a); err != nil {
		return err
	}
	l.rules[0].alg.Store(&algoBox{a: a})
	return nil
}

// Algorithm returns the algorithm the limiter applies now. A composite made by All has no
// single algorithm: it returns nil (see Rules).
func (l *Limiter) Algorithm() algo.Algorithm {
	if l.unmade() || len(l.rules) > 1 {
		return nil
	}
	return l.rules[0].alg.Load().a
}

// Rules returns the rules of a composite made by All, in the order they are applied, and
// nil for any other Limiter.
func (l *Limiter) Rules() []*Limiter {
	if l.unmade() || len(l.rules) == 1 {
		return nil
	}
	rs := make([]*Limiter, len(l.rules))
	for i, r := range l.rules {
		rs[i] = r.lim
	}
	return rs
}

// String describes the Limiter for traces and messages: its algorithm, or all(rule, ...).
func (l *Limiter) String() string {
	if l.unmade() {
		return "limiter(unmade)"
	}
	if len(l.rules) == 1 {
		return storecheck.Describe(l.rules[0].alg.Load().a)
	}
	parts := make([]string, len(l.rules))
	for i, r := range l.rules {
		parts[i] = r.lim.String()
	}
	return "all(" + strings.Join(parts, ", ") + ")"
}

// Allow takes one permit for key if it is available now: AllowN(ctx, key, 1).
func (l *Limiter) Allow(ctx context.Context, key string) (Decision, error) {
	return l.AllowN(ctx, key, 1)
}

// AllowN reports whether n permits for key are available now, and takes them if so; it
// never waits. A denial has RetryAfter (algo.Never if n exceeds what the algorithm ever
// grants). It returns algo.ErrInvalidRequest for n ≤ 0, store.ErrInvalidKey for an empty key,
// and when the store is unavailable the failure policy's Decision with the store error
// (under FailOpen an allowed Decision with a non-nil error).
func (l *Limiter) AllowN(ctx context.Context, key string, n int64) (Decision, error) {
	var res result
	err := l.ask(ctx, key, algo.Request{N: n}, &res)
	return res.d, err
}

// Charge records n permits of key as used whatever is left: usage known only after the
// work (an LLM response's tokens, a download's bytes). It is never refused for lack of
// permits: the excess is debt that later requests wait out (per algorithm:
// docs/usage-based-limits.md). Its Decision is the key after the charge: Allowed, Remaining
// 0 while in debt, RetryAfter until one permit is back. A composite charges every rule.
// Errors as AllowN's, and algo.ErrInvalidRequest for an algorithm that does not state
// algo.Chargeable; FailClosed and FailOpen record nothing, Fallback charges its limiter.
func (l *Limiter) Charge(ctx context.Context, key string, n int64) (Decision, error) {
	var res result
	err := l.ask(ctx, key, algo.Request{N: n, Charge: true}, &res)
	return res.d, err
}

// ask is AllowN and Charge: q through the pipeline, holding nothing, its answer in res.d
// and its soft error returned beside an answer that stands. It returns no Decision: a
// struct returned by value is copied once more at each call, and small as it is, ask is
// inlined into AllowN and Charge, which return res.d to their caller.
func (l *Limiter) ask(ctx context.Context, key string, q algo.Request, res *result) error {
	err := l.run(ctx, key, q, res)
	if err == nil {
		err = res.soft // the request stands: FailOpen or Fallback answered a store failure
	}
	return err
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
	res := result{keep: true}
	err := l.run(ctx, key, algo.Request{N: n, MaxWait: max(maxWait, 0)}, &res)
	switch {
	case res.refused:
		return l.reservation(n, Decision{}, &res), err
	case err != nil:
		return nil, err
	}
	return l.reservation(n, res.d, &res), res.soft
}

// reservation records the answer d to a request of n permits as a Reservation, timed on
// the clock of the Limiter that answered (res.answerer).
func (l *Limiter) reservation(n int64, d Decision, res *result) *Reservation {
	c := res.answerer(l).clock
	r := &Reservation{clock: c, key: res.key, n: n, d: d, readyAt: c.Now()}
	if d.Allowed {
		r.readyAt = r.readyAt.Add(d.Wait)
		r.held = res.held
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
		res := result{keep: true}
		err := l.run(ctx, key, algo.Request{N: n, MaxWait: maxWait}, &res)
		d := &res.d
		switch {
		case err != nil:
			return err
		case d.Allowed:
			return l.sleep(ctx, l.reservation(n, *d, &res))
		case d.RetryAfter == algo.Never:
			return exceeds(res.key, n, d.Limit)
		case hasDeadline:
			return fmt.Errorf("%w: key %q: n=%d cannot be granted within %v (retry after %v)",
				ErrWouldExceedDeadline, res.key, n, maxWait, d.RetryAfter)
		}
		if err := res.answerer(l).clock.Sleep(ctx, max(d.RetryAfter, time.Microsecond)); err != nil {
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
	res := result{keep: true}
	err := l.run(ctx, key, algo.Request{N: n, MaxWait: maxWait}, &res)
	d := &res.d
	switch {
	case err != nil:
		return false, err
	case d.Allowed:
		if err := l.sleep(ctx, l.reservation(n, *d, &res)); err != nil {
			return false, err
		}
		return true, nil
	case d.RetryAfter == algo.Never:
		return false, exceeds(res.key, n, d.Limit)
	default:
		return false, nil
	}
}

// Peek reports what Allow(ctx, key) would answer now, taking nothing and moving no expiry;
// its Remaining is what the key has before that Allow (a composite: its rules peeked in
// turn). Peek and Reset are for operators: no failure policy, breaker or error handler; a
// store without store.Admin gives store.ErrUnsupported. WithTimeout bounds each call.
func (l *Limiter) Peek(ctx context.Context, key string) (Decision, error) {
	if l.unmade() {
		return Decision{}, errUnmade
	}
	return l.peek(ctx, key)
}

// Reset forgets the state of key (for a composite, every rule's at its key), so that its
// next request is answered as a new key's; other algorithm slots are left alone. It is one
// atomic call per store and key; a composite resets all of them even when one fails and
// returns the failures joined. A concurrent request is decided before or after it, never
// on a mix. Errors as Peek's.
//
// A Cancel after the Reset never gives the new state more than the key would admit
// without it (docs/admin.md, "Reset and reservations").
func (l *Limiter) Reset(ctx context.Context, key string) error {
	if l.unmade() {
		return errUnmade
	}
	return l.reset(ctx, key)
}
