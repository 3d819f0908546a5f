package limiter

import (
	"github.com/ratekit/limiter/algo"
)

// request is one request of Allow, Reserve, WaitN or TryAcquire on its way to decide.
type request = algo.Request

// outcome is what decide found beside its Decision.
type outcome struct {
	key   string         // the key decided: after the key function of one rule, as given for a rule set
	alg   algo.Algorithm // one rule whose store granted: the algorithm applied; nil otherwise
	parts []grant        // a rule set that granted: what each rule holds, to give back
	soft  error          // a store failure that FailOpen or Fallback answered: the request stands
	by    *Limiter       // the Fallback limiter that answered (then key, alg and parts are its); nil: the limiter asked

	refused bool // refused by FailClosed (or, in a rule set, by a rule's failing Fallback)
}

// holds reports whether an allowed outcome holds permits that a Reservation can give back:
// none when FailOpen answered.
func (o *outcome) holds() bool { return o.alg != nil || len(o.parts) > 0 }

// holder is the limiter that answered, and holds what o holds: l, or its Fallback.
func (o *outcome) holder(l *Limiter) *Limiter {
	if o.by != nil {
		return o.by
	}
	return l
}

// grants is what o holds after l (a rule of a rule set) granted d for n permits.
func (o *outcome) grants(l *Limiter, n int64, d Decision) []grant {
	switch {
	case !d.Allowed || !o.holds():
		return nil
	case o.parts != nil:
		return o.parts
	default:
		return []grant{{lim: o.holder(l), key: o.key, alg: o.alg, n: n, at: d.At}}
	}
}

// folded returns d with o's soft error as its error, if any (a request that stands has no
// other): the answer of Allow, which passes no outcome to decide.
func (o *outcome) folded(d Decision, err error) (Decision, error) {
	if o.soft != nil {
		return d, o.soft
	}
	return d, err
}
