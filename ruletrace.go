package limiter

import (
	"context"
)

// traceKey is the context key of TraceRules.
type traceKey struct{}

// TraceRules returns ctx carrying f, to which a composite made by All reports, before it
// returns, each rule's own Decision (its own carries the binding rule's figures only), in
// order, for each rule whose store answered: not rules unreached, answered by their
// failure policy or in shadow mode. A nil f returns ctx unchanged.
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
