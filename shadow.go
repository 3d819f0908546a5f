package limiter

// WithShadow puts the Limiter in shadow mode, to try a limit on real traffic: each request
// is decided, takes what it is granted and is reported as usual (Event.Shadow, real
// figures), but the caller is let through: Allow returns an allowed Decision; Reserve,
// WaitN and TryAcquire ask for what is available now and grant at once; a store failure
// is answered as by FailOpen (the Observer sees the policy's real answer). Errors that are
// not decisions (n ≤ 0, an empty key, a done context) are returned as usual. In a
// composite it is per rule: a shadow rule counts as granting (docs/observability.md).
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
