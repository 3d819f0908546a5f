package algo

import "slices"

// StateCloner is implemented by a State that can copy itself. The states of this package's
// algorithms need not implement it ([CloneState] knows them); a custom Algorithm implements
// it on its states so that a store can apply it as one of several rules atomically (the
// local store's ApplyAll snapshots each rule's state and keeps the copies only when every
// rule grants). Without it such a store falls back to refunds.
type StateCloner interface {
	// CloneState returns a deep copy of the state: applying or refunding on one copy never
	// changes the other.
	CloneState() State
}

// CloneState returns a deep copy of st, a state made by the NewState of one of this
// package's algorithms, or of any state implementing [StateCloner]. It returns nil when st
// is nil or of a type it cannot copy. The copy decides exactly like st: applying a request
// to it and keeping it is the same as applying the request to st.
func CloneState(st State) State {
	switch s := st.(type) {
	case *fixedWindowState:
		c := *s
		return &c
	case *slidingLogState:
		c := *s
		c.entries = slices.Clone(s.entries) // an exact copy, head and reused prefix included
		return &c
	case *slidingCounterState:
		c := *s
		return &c
	case *tokenBucketState:
		c := *s
		return &c
	case *leakyBucketState:
		c := *s
		return &c
	case *gcraState:
		c := *s
		return &c
	case *smoothState:
		c := *s
		return &c
	case StateCloner:
		if s == nil {
			return nil
		}
		return s.CloneState()
	}
	return nil
}
