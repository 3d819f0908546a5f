package limiter

import (
	"context"
	"fmt"
	"sync/atomic"
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
// an error wrapping ErrInvalidConfig.
type Limiter struct {
	store   store.Store
	alg     atomic.Pointer[algoBox]
	clock   clockx.Clock
	policy  FailurePolicy
	timeout time.Duration
	breaker *breaker // nil with CircuitBreaker{Off: true}
	direct  bool     // no timeout: AllowN goes straight to the store while the breaker is clean
	onError func(key string, err error)
	keyFn   func(key string) string // WithKeyFunc; nil: the key as given
	obs     Observer                // WithObserver; nil: none
	shadow  bool                    // WithShadow

	// set holds the rules of a composite made by All (all.go), which has no store or alg.
	set *ruleSet
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
// ErrInvalidConfig, naming the input, for a nil s, a nil or invalid a, or an invalid
// option. Closing s stays the caller's business.
func New(s store.Store, a algo.Algorithm, opts ...Option) (*Limiter, error) {
	if nilcheck.Nil(s) { // a typed nil (*local.Store)(nil) too: it would panic on first use
		return nil, fmt.Errorf("%w: store is nil", ErrInvalidConfig)
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
		store:   s,
		clock:   o.clock,
		policy:  o.policy,
		timeout: o.timeout,
		onError: o.errorHandler,
		keyFn:   o.keyFn,
		obs:     o.observer,
		shadow:  o.shadow,
	}
	if !o.breaker.Off {
		l.breaker = newBreaker(o.breaker, o.clock)
		l.breaker.obs = o.observer
	}
	// An observed or shadow limiter decides through decideNoted, never the direct path.
	l.direct = l.timeout <= 0 && !l.noted()
	l.alg.Store(&algoBox{a: a})
	return l, nil
}

func checkAlgorithm(a algo.Algorithm) error {
	if a == nil {
		return fmt.Errorf("%w: algorithm is nil", ErrInvalidConfig)
	}
	return a.Validate()
}

// SetAlgorithm replaces the algorithm atomically, for example to change a rate at run
// time; it returns ErrInvalidConfig, changing nothing, for a nil or invalid a or a
// composite. Keys keep their state when a's Slot is the old one's (never admitting more
// than golang.org/x/time/rate's SetLimit and SetBurst would), else start fresh
// (docs/algorithms.md, "Config changes").
func (l *Limiter) SetAlgorithm(a algo.Algorithm) error {
	if l.unmade() {
		return errUnmade
	}
	if l.set != nil {
		return fmt.Errorf("%w: SetAlgorithm on a composite made by All: set it on one of its rules", ErrInvalidConfig)
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

// Allow reports whether one permit for key is available now, and takes it if so. It is
// AllowN(ctx, key, 1).
func (l *Limiter) Allow(ctx context.Context, key string) (Decision, error) {
	var d Decision
	err := l.allow(ctx, key, 1, &d)
	return d, err
}

// AllowN reports whether n permits for key are available now, and takes them if so; it
// never waits. A denial has RetryAfter (algo.Never if n exceeds what the algorithm ever
// grants). It returns ErrInvalidRequest for n ≤ 0, store.ErrInvalidKey for an empty key,
// and when the store is unavailable the failure policy's Decision with the store error
// (under FailOpen an allowed Decision with a non-nil error).
func (l *Limiter) AllowN(ctx context.Context, key string, n int64) (Decision, error) {
	// allow checks n and l: this one call keeps AllowN small enough to be inlined, and the
	// Decision it writes through &d reaches the caller without a struct copy.
	var d Decision
	err := l.allow(ctx, key, n, &d)
	return d, err
}

// keyFor is the key the limiter limits for key (WithKeyFunc).
func (l *Limiter) keyFor(key string) string {
	if l.keyFn == nil {
		return key
	}
	return l.keyFn(key)
}
