package server

import (
	"fmt"
	"sync"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/store"
)

// maxCachedLimiters bounds the Limiters kept for reuse. Rules of the configuration are few,
// but the limit overrides a request may carry come from outside: past this many, an
// override's Limiter is built for its call and dropped.
const maxCachedLimiters = 4096

// limiters hands out one Limiter per algorithm config, built over the service's store
// with its failure policy, breaker and observer. A Limiter holds no per-key state (the
// store does), so rules that are unchanged by a reload keep their counts whether or not
// their Limiter is reused; reusing it keeps its circuit breaker's history.
type limiters struct {
	store    store.Store
	fallback store.Store // for FailurePolicy "local"; nil otherwise
	opts     []limiter.Option
	policy   Policy

	mu sync.RWMutex
	m  map[string]*limiter.Limiter
}

func newLimiters(s store.Store, o *Options, obs limiter.Observer) *limiters {
	ls := &limiters{store: s, fallback: o.FallbackStore, policy: o.FailurePolicy, m: map[string]*limiter.Limiter{}}
	ls.opts = append(ls.opts, limiter.WithCircuitBreaker(o.Breaker))
	if o.Timeout > 0 {
		ls.opts = append(ls.opts, limiter.WithTimeout(o.Timeout))
	}
	if o.Clock != nil {
		ls.opts = append(ls.opts, limiter.WithClock(o.Clock))
	}
	if obs != nil {
		ls.opts = append(ls.opts, limiter.WithObserver(obs))
	}
	return ls
}

// ruleLimiter is the Limiter a Rule found in a limiters, kept on the rule (Rule.lim).
type ruleLimiter struct {
	ls *limiters
	l  *limiter.Limiter
}

// of returns the Limiter of r's algorithm, the one get returns, remembered on r so that
// the next call on r neither names the algorithm (algorithmID formats it) nor takes the
// lock. A Rule read by several Services keeps the last one's: the others look theirs up.
// A transient rule (a limit override, built for its call) is not worth remembering.
func (ls *limiters) of(r *Rule) (*limiter.Limiter, error) {
	if c := r.lim.Load(); c != nil && c.ls == ls {
		return c.l, nil
	}
	l, err := ls.get(r.Algorithm)
	if err == nil && !r.transient {
		r.lim.Store(&ruleLimiter{ls: ls, l: l})
	}
	return l, err
}

// get returns the Limiter of a.
func (ls *limiters) get(a algo.Algorithm) (*limiter.Limiter, error) {
	id := algorithmID(a)
	ls.mu.RLock()
	l := ls.m[id]
	ls.mu.RUnlock()
	if l != nil {
		return l, nil
	}
	l, err := ls.build(a)
	if err != nil {
		return nil, err
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if prev := ls.m[id]; prev != nil {
		return prev, nil
	}
	if len(ls.m) < maxCachedLimiters {
		ls.m[id] = l
	}
	return l, nil
}

func (ls *limiters) build(a algo.Algorithm) (*limiter.Limiter, error) {
	opts := append([]limiter.Option(nil), ls.opts...)
	switch ls.policy {
	case PolicyOpen:
		opts = append(opts, limiter.WithFailurePolicy(limiter.FailOpen))
	case PolicyLocal:
		fb, err := limiter.New(ls.fallback, a)
		if err != nil {
			return nil, fmt.Errorf("fallback limiter: %w", err)
		}
		opts = append(opts, limiter.WithFailurePolicy(limiter.Fallback(fb)))
	}
	return limiter.New(ls.store, a, opts...)
}
