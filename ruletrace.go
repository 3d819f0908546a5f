package limiter

import "context"

// traceKey is the context key of TraceRules.
type traceKey struct{}

// TraceRules returns a copy of ctx under which a composite made by All tells f each rule's
// own Decision: a composite's Decision carries only the binding rule's figures, and a
// caller that describes every rule (httplimit's RateLimit headers, one item per rule)
// needs each one's. For every request the composite answers (allowed or denied, not
// failed), f is called on the caller's goroutine before the call returns, once for each
// rule whose store answered, in the order the rules were applied, with that rule (one of
// the composite's Rules) and its Decision. Rules the request did not reach (after a
// denial), rules whose failure policy answered for their store, and rules in shadow mode
// are not reported. On a denied request, a rule that granted reports the Decision of its
// grant, which was then given back.
//
// A call on a Limiter that is not a composite, or made without this context, reports
// nothing; f is then never called, and a composite looks for it once per request. A
// composite that answers for a rule as its Fallback reports its own rules to f as well:
// match the rule against the Rules you expect. A nil f returns ctx unchanged.
func TraceRules(ctx context.Context, f func(rule *Limiter, d Decision)) context.Context {
	if f == nil {
		return ctx
	}
	return context.WithValue(ctx, traceKey{}, f)
}

// traceRules passes the answers of a composite's request to the TraceRules function of
// ctx, if any.
func traceRules(ctx context.Context, as []answer) {
	f, ok := ctx.Value(traceKey{}).(func(*Limiter, Decision))
	if !ok {
		return
	}
	for _, a := range as {
		if a.rule != nil && !a.rule.shadow {
			f(a.rule, a.d)
		}
	}
}
