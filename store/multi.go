package store

import (
	"context"

	"github.com/ratekit/limiter/algo"
)

// MultiApplier is implemented by stores that apply several rules to one key in one atomic
// step, all or nothing; limiter.All uses it for the rules that share a store and a key. Both
// stores of the module implement it.
//
// ApplyAll answers req under every rule at one instant of the store's clock. It returns one
// Decision per rule, in order, and ok: true when every rule granted, and then every grant is
// committed; false when one denied, and then no state changed. Each Decision is computed
// against the state before the call, so when ok is false a Decision with Allowed true says
// its rule alone would have granted, and describes a grant that was not kept. The rules
// must have distinct slots; errors are those of Store.Apply.
type MultiApplier interface {
	ApplyAll(ctx context.Context, key string, rules []algo.Algorithm, req algo.Request) (ds []algo.Decision, ok bool, err error)
}
