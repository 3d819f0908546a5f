package limiter

import (
	"strconv"

	"github.com/ratekit/limiter/algo"
)

// Two rules of a composite never share a state, whatever their key functions return: a
// rule whose algorithm slot an earlier rule on the same store already has (same algorithm
// and window, no algo.Named to tell them apart) is applied under the slot
// ":<i>:<slot>", i being its position in the composite (from 1, after nested composites
// are flattened); on Redis that is the key <prefix>{<user key>}::<i>:<slot>, so the hash
// tag is still the user key and the rules on one key stay in one Cluster slot, applied by
// one script. Per-user and per-endpoint fixed windows of one length thus stay apart for the
// user named "/upload" calling "/upload". No slot of package algo, and no algo.Named slot,
// starts with ':' (a Named name holds no ':'), so a namespaced state never meets a state of
// a limiter used alone.
//
// Every other rule keeps the state it keeps used alone: a per-user rule used on its own
// for some requests and in a composite for others counts both against one limit. The
// position, not an identity of the process, names a namespace, so every process that
// builds the same composite reaches the same keys. The decision is made per request, with
// the rules' algorithms of that request, so no two rules meet after a SetAlgorithm either.
// A SetAlgorithm that gives a rule the slot of a later rule, though, moves the later rule
// into its namespace, where its count restarts, and the changed rule takes the slot over
// with the state the later rule left there: a one-time restart of the kind SetAlgorithm
// documents when a rule's own slot changes.

// ruleAlgs returns each rule's algorithm for one request, a rule's under its namespace
// when an earlier rule on its store has its slot (see above). buf is scratch space.

// spacedBox is a rule's algorithm (box) and the same under the rule's namespace (a).
type spacedBox struct {
	box *algoBox
	a   algo.Algorithm
}

// inNamespace returns a applied under the namespace of the composite's i-th rule.
func inNamespace(i int, a algo.Algorithm) algo.Algorithm {
	s := &spaced{slot: ":" + strconv.Itoa(i) + ":" + a.Slot(), a: a}
	if _, ok := a.(algo.Scripted); ok {
		return spacedScripted{s}
	}
	return s
}

// spaced is an algorithm under a slot of its own and otherwise unchanged, as algo.Named
// makes one. It is a pointer, so comparing two (as leasing and the local store compare
// configs) never panics, whatever the inner algorithm's type.
type spaced struct {
	slot string
	a    algo.Algorithm
}

// spacedScripted is a spaced algorithm whose inner algorithm has a Lua twin.
type spacedScripted struct{ *spaced }

// Compile-time checks.
var (
	_ algo.Algorithm = (*spaced)(nil)
	_ algo.Scripted  = spacedScripted{}
)

// Name returns the inner algorithm's Name, so that a store runs its script.
func (s *spaced) Name() string { return s.a.Name() }

// Validate validates the inner algorithm.
func (s *spaced) Validate() error { return s.a.Validate() }

// Slot returns the namespaced slot.
func (s *spaced) Slot() string { return s.slot }

// NewState returns the inner algorithm's fresh state.
func (s *spaced) NewState() algo.State { return s.a.NewState() }

// Apply applies the inner algorithm.
func (s *spaced) Apply(st algo.State, now int64, req algo.Request) algo.Decision {
	return s.a.Apply(st, now, req)
}

// Refund refunds with the inner algorithm.
func (s *spaced) Refund(st algo.State, now int64, n int64, at int64) { s.a.Refund(st, now, n, at) }

// Unwrap returns the inner algorithm, so that what it implements (its capabilities, its
// quota) is found through the namespace.
func (s *spaced) Unwrap() algo.Algorithm { return s.a }

// String describes the inner algorithm: errors name the rule as it was given.
func (s *spaced) String() string {
	if st, ok := s.a.(interface{ String() string }); ok {
		return st.String()
	}
	return s.a.Name()
}

// Script returns the inner algorithm's Lua twin: only the key names differ, and the store
// builds them from the slot.
func (s spacedScripted) Script() *algo.Script { return s.a.(algo.Scripted).Script() }

// AppendArgs appends the inner algorithm's config arguments.
func (s spacedScripted) AppendArgs(args []any) []any { return s.a.(algo.Scripted).AppendArgs(args) }
