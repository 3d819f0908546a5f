package algo

// Capability is a set of things a store or a feature may do with an algorithm beyond
// applying it: take its permits ahead in slices (package leasing), answer its denials from
// a cache (the Redis store's denial cache), let several keys share one of its states (the
// local store when it is full), and one thing a store must do: write the state of an
// algorithm whose denials write. Each is a promise about the algorithm's decisions that the
// feature relies on to keep its bound, so it is asked of the algorithm ([CapabilitiesOf])
// rather than inferred from its type: a custom algorithm opts in by implementing
// [Capable], and a wrapper keeps the capabilities of the algorithm it wraps.
type Capability uint8

const (
	// Leasable: permits granted at one instant may be handed out a little later, in
	// parts, by a store that took them in one grant (package leasing): the algorithm
	// limits how many permits are granted, not how they are spaced (the smooth
	// algorithms are not leasable: their spacing is their point).
	Leasable Capability = 1 << iota

	// LeaseEndsAtReset: a lease of a Leasable algorithm must not outlive the ResetAfter
	// of the grant that filled it. A fixed window's ResetAfter is the end of the window
	// that counted the grant; a permit of that window handed out in the next one would
	// come on top of the next window's whole limit.
	LeaseEndsAtReset

	// DenialCacheable: a denial writes no state, and while nothing else changes the state
	// the same request stays denied until its RetryAfter, so a store may answer it from
	// a cache until then.
	DenialCacheable

	// OverflowSafe: a state that has granted more since it was fresh never decides more
	// permissively than one that granted less, and a fresh state is the most permissive.
	// Several keys may then share one state (the local store's overflow state when it
	// holds as many keys as it may): each is decided at least as strictly as its own
	// state would. Guava's smooth limiters are not: a fresh key starts empty or cold,
	// the slowest it can be.
	OverflowSafe

	// WritesOnDenial: unlike the others, a duty rather than a permission. A denial may
	// write the state ([Penalty]'s offence starts a block), so a store that writes nothing
	// on a denial (the local store keeps a key's expiry as it was) must write this
	// algorithm's state on every decision instead, with the decision's ResetAfter.
	WritesOnDenial

	// Exact: the algorithm keeps the strict reading of a Decision that the conformance
	// suite (package store/storetest) checks: a request for more than Limit is denied with
	// RetryAfter Never, one for at most Limit with MaxWait Forever is granted (unless a
	// full queue has no room for it: the leaky bucket), one for Remaining+1 permits is
	// denied, and a state kept past its ResetAfter decides as a fresh one. The smooth algorithms are not exact (as Guava's, they grant a request of
	// any size at once and make the next one pay, and a full SmoothBursty is not a fresh
	// one), nor is Penalty (it denies while blocked, whatever the request's MaxWait).
	Exact

	// Chargeable: the algorithm answers a [Request] with Charge set, recording its N as
	// used whatever is left (debt that later requests wait out), and never denies it for
	// lack of permits; its Lua twin does the same for the operation "charge". What debt
	// means for each of this package's algorithms is in docs/usage-based-limits.md.
	Chargeable
)

// Capable is implemented by a custom algorithm that states its capabilities. (This
// package's config structs state theirs through an unexported method that [CapabilitiesOf]
// reads alike.) A wrapper that decides exactly as the algorithm it wraps ([Named]) does
// not implement it, and is looked through by its Unwrap method; a wrapper that changes the
// decisions ([Penalty], whose denials write state) states its own.
type Capable interface {
	// Capabilities returns what the algorithm allows; it does not depend on any state.
	Capabilities() Capability
}

// CapabilitiesOf returns the capabilities of the first algorithm of a's chain that
// states them (implements [Capable], or is one of this package's algorithms), the chain being a, then what its Unwrap() Algorithm method returns,
// and so on (as errors.As walks an error's chain). It is 0, nothing allowed, when no
// algorithm of the chain states any.
func CapabilitiesOf(a Algorithm) Capability {
	for a != nil {
		switch c := a.(type) {
		case capable:
			return c.capabilities()
		case Capable:
			return c.Capabilities()
		}
		a = unwrapAlgorithm(a)
	}
	return 0
}

// capable is Capable for this package's algorithms: their capabilities are read through
// CapabilitiesOf, so the method need not be part of each config struct's API.
type capable interface{ capabilities() Capability }

// unwrapAlgorithm returns the algorithm a wraps (its Unwrap() Algorithm method), or nil.
func unwrapAlgorithm(a Algorithm) Algorithm {
	if u, ok := a.(interface{ Unwrap() Algorithm }); ok {
		return u.Unwrap()
	}
	return nil
}

// The capabilities of this package's algorithms, beside one another so that they read as
// a table. Penalty's is in penalty.go.

// capabilities: leasable, denials cacheable, overflow-safe, exact, chargeable.
func (TokenBucket) capabilities() Capability {
	return Leasable | DenialCacheable | OverflowSafe | Exact | Chargeable
}

// capabilities: leasable, denials cacheable, overflow-safe, exact, chargeable.
func (GCRA) capabilities() Capability {
	return Leasable | DenialCacheable | OverflowSafe | Exact | Chargeable
}

// capabilities: leasable, denials cacheable, overflow-safe, exact, chargeable.
func (LeakyBucket) capabilities() Capability {
	return Leasable | DenialCacheable | OverflowSafe | Exact | Chargeable
}

// capabilities: leasable within the window of the grant, denials cacheable, overflow-safe,
// exact, chargeable.
func (FixedWindow) capabilities() Capability {
	return Leasable | LeaseEndsAtReset | DenialCacheable | OverflowSafe | Exact | Chargeable
}

// capabilities: leasable, denials cacheable, overflow-safe, exact, chargeable.
func (SlidingWindowLog) capabilities() Capability {
	return Leasable | DenialCacheable | OverflowSafe | Exact | Chargeable
}

// capabilities: leasable, denials cacheable, overflow-safe, exact, chargeable.
func (SlidingWindowCounter) capabilities() Capability {
	return Leasable | DenialCacheable | OverflowSafe | Exact | Chargeable
}

// capabilities: denials cacheable, chargeable (its point is the spacing of grants, and a
// fresh state is its slowest).
func (SmoothBursty) capabilities() Capability { return DenialCacheable | Chargeable }

// capabilities: denials cacheable, chargeable (its point is the spacing of grants, and a
// fresh state is its coldest).
func (SmoothWarmingUp) capabilities() Capability { return DenialCacheable | Chargeable }
