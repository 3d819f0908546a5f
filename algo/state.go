package algo

// StateCloner is implemented by a State that can copy itself. The states of this package's
// algorithms implement it; a custom Algorithm implements it on its states so that a store
// can apply it as one of several rules atomically (the local store's ApplyAll snapshots
// each rule's state and keeps the copies only when every rule grants). Without it such a
// store falls back to refunds.
type StateCloner interface {
	// CloneState returns a deep copy of the state: applying or refunding on one copy never
	// changes the other.
	CloneState() State
}

// cloneState returns a deep copy of st, a state implementing [StateCloner] (as the states
// of this package's algorithms do), or nil when st is nil or cannot copy itself. The copy
// decides exactly like st: applying a request to it and keeping it is the same as applying
// the request to st.
func cloneState(st State) State {
	if c, ok := st.(StateCloner); ok {
		return c.CloneState()
	}
	return nil
}

// ConfigCarrier is implemented by a State that records the config it was last written
// under and carries itself over when applied under another one, as the smooth algorithms'
// states do (Guava's setRate rescales the stored permits). A store that starts a state
// afresh once it has expired under a config that has changed since keeps such a state
// instead (see the local store's expiry rule).
type ConfigCarrier interface {
	// CarriesConfig reports whether the state carries itself across a change of config.
	CarriesConfig() bool
}
