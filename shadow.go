package limiter

// WithShadow puts the Limiter in shadow mode: every request is decided and reported as
// usual (the Observer sees the real outcome, with Event.Shadow set; the Decision keeps the
// real Limit, Remaining, RetryAfter and ResetAfter, so httplimit's RateLimit headers show
// them), but the caller is always let through. It is for trying a new limit on
// production traffic before enforcing it. The default is off.
//
// What each call does in shadow mode:
//
//   - Allow and AllowN return an allowed Decision. A request the store grants takes its
//     permits as usual, so the figures stay true; a request it denies takes nothing.
//   - Reserve, WaitN and TryAcquire never wait: they ask as Allow does (a grant only of
//     what is available now, so a caller that never sleeps cannot run the state into a
//     debt no real caller could), and grant at once: an OK Reservation with no delay,
//     nil, (true, nil). A request that could never be granted (more than the algorithm
//     holds) is let through too; the Observer sees it denied with RetryAfter algo.Never.
//   - A store failure is answered as FailOpen answers it (allowed, the error returned where
//     FailOpen returns it and passed to WithErrorHandler's function), whatever the failure
//     policy: the Observer sees the policy's real answer, and a Fallback limiter is asked
//     as by Allow (it never sleeps).
//   - Errors that are not decisions (n ≤ 0, an empty key, the caller's cancelled context)
//     are returned as without shadow mode.
//
// In a composite made by All, shadow mode is per rule: a rule in shadow mode counts as
// granting whatever it decides (taking only what it granted), while the other rules are
// enforced, so a new rule can be tried beside the limits in force. Its figures stay in
// the composite's Decision (the binding rule's Remaining may be the shadow rule's). A
// group of rules on one store and key that holds a shadow rule is applied rule by rule
// rather than in one atomic store call.
func WithShadow() Option {
	return optionFunc(func(o *options) { o.shadow = true })
}

// shadowAnswer turns the answer (d, err) of one rule in shadow mode, whose store call
// ended with callErr, into a grant: a denial takes nothing (o.alg cleared: nothing to give
// back), and a store failure is answered as FailOpen answers it, keeping a Fallback's
// figures. Any other error stays the request's.
func shadowAnswer(d Decision, err error, o *outcome, callErr error) (Decision, error) {
	if _, failed := callErr.(*unavailable); !failed {
		if callErr == nil && !d.Allowed {
			o.alg = nil
			d.Allowed, d.Wait = true, 0
		}
		return d, err
	}
	if err == nil {
		err = o.soft
	}
	*o = outcome{key: o.key, soft: err}
	if d.Limit == 0 {
		d = Decision{} // FailClosed's, or a failing Fallback's: no figures
	}
	d.Allowed = true
	return d, nil
}
