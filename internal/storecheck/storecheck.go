package storecheck

import (
	"context"
	"fmt"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/store"
)

// Context returns nil while ctx is live, and ctx.Err() once it is done: stores call it
// before doing anything, so a call on a cancelled or expired context consumes nothing and
// is not mistaken for a store failure (see store.Store). A nil ctx counts as live.
func Context(ctx context.Context) error {
	if ctx == nil {
		return nil
	}
	return ctx.Err() // nil until Done is closed, non-nil after (context.Context's contract)
}

// Apply validates the arguments of an Apply (or Refund) call; stores call it first.
func Apply(key string, a algo.Algorithm, req algo.Request) error {
	if key == "" {
		return fmt.Errorf("%w: key must not be empty", store.ErrInvalidKey)
	}
	if a == nil {
		return fmt.Errorf("%w: algorithm is nil", algo.ErrInvalidConfig)
	}
	if err := a.Validate(); err != nil {
		return err
	}
	return Request(a, req)
}

// ApplyAll validates the arguments of an ApplyAll call; stores call it first. Beyond what
// Apply verifies for each rule, it reports, wrapping algo.ErrInvalidConfig, an empty rule
// list and two rules with the same Slot, which on one key would share one state (wrap one
// of them with algo.Named to keep them apart).
func ApplyAll(key string, rules []algo.Algorithm, req algo.Request) error {
	if len(rules) == 0 {
		return fmt.Errorf("%w: no rules", algo.ErrInvalidConfig)
	}
	for i, a := range rules {
		if err := Apply(key, a, req); err != nil {
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
					algo.ErrInvalidConfig, j+1, Describe(rules[j]), i+1, Describe(rules[i]), si)
			}
		}
	}
	return nil
}

// Describe names a rule in messages: its String when it has one, else its Name.
func Describe(a algo.Algorithm) string {
	if s, ok := a.(fmt.Stringer); ok {
		return s.String()
	}
	return a.Name()
}

// SemaphoreName validates the name of a semaphore: it must not be empty.
func SemaphoreName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: semaphore name must not be empty", store.ErrInvalidKey)
	}
	return nil
}

// SemaphoreToken validates an owner token: it must not be empty.
func SemaphoreToken(token string) error {
	if token == "" {
		return fmt.Errorf("%w: semaphore token must not be empty", algo.ErrInvalidRequest)
	}
	return nil
}

// Semaphore validates the arguments of an Acquire or Renew call; stores call it first.
func Semaphore(name string, cfg algo.Semaphore, token string) error {
	if err := SemaphoreName(name); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	return SemaphoreToken(token)
}

// Reset validates the arguments of a store.Admin Reset call; stores call it first. Beyond
// what Apply verifies of each rule, it reports an empty rule list (wrapping
// algo.ErrInvalidConfig). Rules may share a slot: their state is forgotten once.
func Reset(key string, rules []algo.Algorithm) error {
	if len(rules) == 0 {
		if key == "" {
			return fmt.Errorf("%w: key must not be empty", store.ErrInvalidKey)
		}
		return fmt.Errorf("%w: no rules", algo.ErrInvalidConfig)
	}
	for i, a := range rules {
		if err := Apply(key, a, algo.Request{N: 1}); err != nil {
			if len(rules) == 1 {
				return err
			}
			return fmt.Errorf("rule %d: %w", i+1, err)
		}
	}
	return nil
}

// Call is what a store checks first on every Apply, Refund or Peek, in this order: the
// arguments (Apply), that the store is open (closed false, else store.ErrClosed), and the
// caller's context (Context), so bad input is reported whatever the store's state.
func Call(ctx context.Context, key string, a algo.Algorithm, req algo.Request, closed bool) error {
	if err := Apply(key, a, req); err != nil {
		return err
	}
	if closed {
		return store.ErrClosed
	}
	return Context(ctx)
}

// Request reports whether a may be sent req: req is valid, and a Charge goes only to an
// algorithm that states algo.Chargeable.
func Request(a algo.Algorithm, req algo.Request) error {
	if err := req.Validate(); err != nil {
		return err
	}
	if req.Charge && !chargeable(a) {
		return fmt.Errorf("%w: %s cannot be charged (it does not state algo.Chargeable)", algo.ErrInvalidRequest, a.Name())
	}
	return nil
}

// Chargeable reports whether the Charge req passes Request's checks of a charge (its N
// at most 2^53, a chargeable a), without building an error: a store's hot path asks it.
func Chargeable(a algo.Algorithm, req algo.Request) bool {
	return req.N <= 1<<53 && chargeable(a)
}

func chargeable(a algo.Algorithm) bool { return algo.CapabilitiesOf(a)&algo.Chargeable != 0 }
