package algo

import (
	"fmt"
	"strings"
)

// Named returns a with its state kept under its own slot, name + ":" + a.Slot(), and
// otherwise unchanged: it decides exactly as a does, with the same Name, Validate, NewState,
// Apply and Refund, and, when a has a Lua twin ([Scripted]), the same Script and AppendArgs.
//
// Rules that share a Slot on one key share state (see Algorithm.Slot): two TokenBuckets of
// different rates on one key would both read and spend the bucket "tb". Naming them keeps
// the two apart, for example two limiters used alone on one store (a composite keeps its
// rules apart by itself, but named rules keep readable keys there too):
//
//	fast := algo.Named(algo.TokenBucket{Rate: 100, Burst: 100}, "second")
//	slow := algo.Named(algo.TokenBucket{Rate: 1000.0 / 3600, Burst: 1000}, "hour")
//
// The slot is computed once, here. Validate reports, wrapping ErrInvalidConfig, a nil a, an
// invalid a, or a name that is empty, longer than 64 bytes, or holds a byte outside
// printable ASCII, a space, ':', '{' or '}'. Naming a named algorithm again prefixes its
// slot again.
func Named(a Algorithm, name string) Algorithm {
	r := &namedRule{name: name, a: a}
	if a != nil {
		r.slot = name + ":" + a.Slot()
	}
	if _, ok := a.(Scripted); ok {
		return namedScripted{named{r}}
	}
	return named{r}
}

// named is an Algorithm under a slot of its own. It holds a pointer, so comparing two
// named values (as caches keyed by an algorithm do) never panics, whatever the inner
// algorithm's type; each call of Named makes a distinct value.
type named struct{ *namedRule }

// namedRule is what Named was given; it never changes.
type namedRule struct {
	name string
	slot string
	a    Algorithm
}

// namedScripted is a named Algorithm whose inner algorithm has a Lua twin.
type namedScripted struct{ named }

// Compile-time checks.
var (
	_ Algorithm = named{}
	_ Scripted  = namedScripted{}
)

// Name returns the inner algorithm's Name, so that a store runs its script.
func (n named) Name() string {
	if n.a == nil {
		return "named"
	}
	return n.a.Name()
}

// Validate checks the name, then the inner algorithm.
func (n named) Validate() error {
	if n.a == nil {
		return fmt.Errorf("%w: Named %q: algorithm is nil", ErrInvalidConfig, n.name)
	}
	if err := checkRuleName(n.name); err != nil {
		return err
	}
	return n.a.Validate()
}

func checkRuleName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("%w: Named: name must be 1 to 64 bytes, got %q", ErrInvalidConfig, name)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c > '~' || c == ':' || c == '{' || c == '}' {
			return fmt.Errorf("%w: Named: name %q holds %q; use printable ASCII without spaces, ':', '{' or '}'",
				ErrInvalidConfig, name, string(rune(c)))
		}
	}
	return nil
}

// Slot returns name + ":" + the inner algorithm's Slot.
func (n named) Slot() string { return n.slot }

// NewState returns the inner algorithm's fresh state (nil when it is nil, which Validate
// reports).
func (n named) NewState() State {
	if n.a == nil {
		return nil
	}
	return n.a.NewState()
}

// Apply applies the inner algorithm (a nil one, which Validate reports, denies).
func (n named) Apply(s State, now int64, req Request) Decision {
	if n.a == nil {
		return Decision{RetryAfter: Never}
	}
	return n.a.Apply(s, now, req)
}

// Refund refunds with the inner algorithm.
func (n named) Refund(s State, now int64, k int64, at int64) {
	if n.a != nil {
		n.a.Refund(s, now, k, at)
	}
}

// Unwrap returns the inner algorithm, so that code looking for what it implements (QuotaOf,
// for example) can find it.
func (n named) Unwrap() Algorithm { return n.a }

// RuleName returns the name given to Named.
func (n named) RuleName() string { return n.name }

// String describes the rule as name=inner.
func (n named) String() string {
	var b strings.Builder
	b.WriteString(n.name)
	b.WriteByte('=')
	if s, ok := n.a.(fmt.Stringer); ok {
		b.WriteString(s.String())
	} else {
		fmt.Fprintf(&b, "%v", n.a)
	}
	return b.String()
}

// Script returns the inner algorithm's Lua twin: the state keys differ only by the slot,
// which the store puts in the key names, so the script is the same.
func (n namedScripted) Script() *Script { return n.a.(Scripted).Script() }

// AppendArgs appends the inner algorithm's config arguments.
func (n namedScripted) AppendArgs(args []any) []any { return n.a.(Scripted).AppendArgs(args) }
