package store

import (
	"context"

	"github.com/ratekit/limiter/algo"
)

// MultiApplier is implemented by stores that can apply several rules to one key in one
// atomic step, all or nothing: limiter.All uses it for the rules of a composite that share
// a store and a key ("100 per second AND 20 per 100 ms" on one API key). Both stores of the
// module implement it: the local store under one shard lock, the Redis store in one script.
//
// ApplyAll answers req under every rule at one instant of the store's clock. It returns
// one Decision per rule, in order, and ok: true when every rule granted, and then every
// grant is committed; false when at least one denied, and then no state changed at all, as
// if the call had not been made. Every Decision is computed against the state as it was
// before the call (the rules have distinct slots, so they never see each other's
// grants): when ok is false, a Decision with Allowed true says that its rule alone would
// have granted the request, and its figures (Remaining, ResetAfter, At) describe a grant
// that was not kept.
//
// The rules must have distinct slots: two rules with the same Slot, which on one key would
// share one state, are an error wrapping algo.ErrInvalidConfig (wrap one of them with
// algo.Named to keep them apart), as is an empty list; other errors are those of
// Store.Apply.
type MultiApplier interface {
	ApplyAll(ctx context.Context, key string, rules []algo.Algorithm, req algo.Request) (ds []algo.Decision, ok bool, err error)
}
