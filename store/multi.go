package store

import (
	"context"
	"fmt"

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

// CheckAll validates the arguments of an ApplyAll call; stores call it first. Beyond what
// Check verifies for each rule, it reports, wrapping algo.ErrInvalidConfig, an empty rule
// list and two rules with the same Slot, which on one key would share one state (wrap one
// of them with algo.Named to keep them apart).
func CheckAll(key string, rules []algo.Algorithm, req algo.Request) error {
	if len(rules) == 0 {
		return fmt.Errorf("%w: no rules", algo.ErrInvalidConfig)
	}
	for i, a := range rules {
		if err := Check(key, a, req); err != nil {
			if a != nil {
				return fmt.Errorf("rule %d (%s): %w", i+1, a.Name(), err)
			}
			return fmt.Errorf("rule %d: %w", i+1, err)
		}
	}
	return DistinctSlots(rules)
}

// DistinctSlots reports, wrapping algo.ErrInvalidConfig, the first two rules with the same
// Slot: applied to one key they would read and write one state. Rules must be non-nil.
func DistinctSlots(rules []algo.Algorithm) error {
	for i := 1; i < len(rules); i++ {
		si := rules[i].Slot()
		for j := 0; j < i; j++ {
			if rules[j].Slot() == si {
				return fmt.Errorf("%w: rules %d (%s) and %d (%s) share the state slot %q on one key; "+
					"wrap one of them with algo.Named to give it a slot of its own",
					algo.ErrInvalidConfig, j+1, describe(rules[j]), i+1, describe(rules[i]), si)
			}
		}
	}
	return nil
}

// describe names a rule for an error message: its String when it has one, else its Name.
func describe(a algo.Algorithm) string {
	if s, ok := a.(fmt.Stringer); ok {
		return s.String()
	}
	return a.Name()
}
