package limiter_test

import (
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/leasing"
)

// The rules of the combos, from a plan's family and bytes.

func plainRules(p *comboPlan) comboRules {
	a := p.fam.config(p.first)
	return comboRules{a: a, boundA: a}
}

// comboPenalty wraps r in a Penalty whose Block is one to four of the family's steps.
func comboPenalty(p *comboPlan, r algo.Algorithm, b byte) algo.Algorithm {
	pen := algo.Penalty{Rule: r, Block: p.fam.scale * time.Duration(1+b%4)}
	if b&4 != 0 {
		pen.Growth, pen.MaxBlock = 2, 8*p.fam.scale
	}
	return pen
}

// leaseRules are plainRules with sizes a lease can take slices of and a window can fill
// in a few steps (3 to 13 permits).
func leaseRules(p *comboPlan) comboRules {
	b := p.first&7 | byte(8*(2+int(p.first>>3)%4))
	a := p.fam.config(b)
	return comboRules{a: a, boundA: a}
}

func penaltyRules(p *comboPlan) comboRules {
	a := p.fam.config(p.first)
	return comboRules{a: comboPenalty(p, a, p.v), boundA: a}
}

// nestedPenaltyRules: a Penalty inside a Penalty (issue 21, case 4). Both layers must keep
// their own state, or Validate must refuse the nesting (runCombo accepts a refusal).
func nestedPenaltyRules(p *comboPlan) comboRules {
	a := p.fam.config(p.first)
	return comboRules{a: comboPenalty(p, comboPenalty(p, a, p.v), p.v>>3), boundA: a}
}

func namedRules(p *comboPlan) comboRules {
	a := p.fam.config(p.first)
	return comboRules{a: algo.Named(a, "model"), boundA: a}
}

// compositeRules: two configs of one family, so one slot, per user and per endpoint
// (issue 21, case 7): on the key "/upload|/upload" both rules are on the key "/upload".
func compositeRules(p *comboPlan) comboRules {
	a, b := p.fam.config(p.first), p.fam.config(p.first^p.v)
	return comboRules{a: a, boundA: a, b: b, boundB: b}
}

// withSeeds sets v's default seeds: the Redis twin of a seam that the local variant finds
// already, or one that a few seeds find surely.
func withSeeds(v comboVariant, n int) comboVariant {
	v.seeds = n
	return v
}

// The families whose configs leasing and the composite reference handle the same way as
// the plain store (the smooth limiters are never leased and pace rather than bound).
var comboRateFamilies = []string{"fixed-window", "sliding-log", "sliding-counter", "token-bucket", "gcra", "leaky-bucket"}

var (
	// A Redis store batches by default; withoutBatching sends a round trip per call.
	withoutBatching = distributed.WithBatching(distributed.Batching{Off: true})
	withDenialCache = distributed.WithDenialCache(distributed.DenialCache{})
)

// modelCombos are the combinations TestModel walks, each variant a subtest
// TestModel/<combo>/<variant>. The comments name the issue 21 case a combo fails on
// before its fix.
var modelCombos = []*combo{
	{name: "procs", keys: comboKeys, rules: plainRules, variants: []comboVariant{
		// Three stores on one Redis as three processes decide as one local store.
		plainVariant("redis", true, 3, agreeFull),
		plainVariant("redis-unbatched", true, 3, agreeFull, withoutBatching),
		// Observed limiters decide off the fast paths: the same answers.
		observed(plainVariant("", false, 1, agreeFull), "local-observed"),
		observed(plainVariant("", true, 3, agreeFull), "redis-observed"),
		clustered(plainVariant("", true, clusterProcs, agreeFull), "cluster"),
		clustered(plainVariant("", true, clusterProcs, agreeFull, withoutBatching), "cluster-unbatched"),
	}},
	{name: "leasing", fams: comboRateFamilies, keys: comboKeys, rules: leaseRules, variants: []comboVariant{
		leasingVariant("local", false, 1, nil),
		leasingVariant("redis", true, 1, nil),
		leasingVariant("procs-local", false, 3, nil),
		leasingVariant("procs-redis", true, 3, nil),
		leasingVariant("procs-redis-unbatched", true, 3, nil, withoutBatching),
		leasingVariant("procs-redis-denial-cache", true, 3, nil, withDenialCache),
		observed(leasingVariant("", false, 3, nil), "procs-local-observed"),
		clustered(leasingVariant("", true, clusterProcs, nil), "procs-cluster"),
	}},
	// Case 2: a Refund after Reset re-grants.
	{name: "leasing-reset", fams: comboRateFamilies, keys: comboKeys[:2], seeds: 32, kinds: comboResetKinds, rules: leaseRules, long: 3, variants: []comboVariant{
		leasingVariant("local", false, 1, nil),
		withSeeds(leasingVariant("redis", true, 1, nil), 12),
	}},
	// Case 1: an evicted lease's leftover goes to the key being created.
	{name: "leasing-evict", fams: comboRateFamilies, keys: comboEvictKeys, seeds: 32, kinds: comboEvictKinds, rules: leaseRules, long: 3, variants: []comboVariant{
		leasingVariant("local", false, 1, []leasing.Option{leasing.WithMaxKeys(32)}),
		withSeeds(leasingVariant("redis", true, 1, []leasing.Option{leasing.WithMaxKeys(32)}), 24),
	}},
	{name: "denial-cache", keys: comboKeys, rules: plainRules, variants: []comboVariant{
		plainVariant("redis", true, 1, agreeGranted, withDenialCache),
		plainVariant("procs-redis", true, 3, agreeNone, withDenialCache),
		plainVariant("procs-redis-unbatched", true, 3, agreeNone, withDenialCache, withoutBatching),
	}},
	{name: "penalty", keys: comboKeys, rules: penaltyRules, variants: []comboVariant{
		plainVariant("redis", true, 1, agreeFull),
		observed(plainVariant("", false, 1, agreeFull), "local-observed"),
		plainVariant("redis-denial-cache", true, 1, agreeGranted, withDenialCache),
	}},
	// Case 4: a Penalty inside a Penalty decides differently on Redis.
	{name: "penalty-nested", keys: comboKeys, rules: nestedPenaltyRules, seeds: 16, variants: []comboVariant{
		plainVariant("redis", true, 1, agreeFull),
	}},
	// algo.Named decides as the rule it names, wherever it goes.
	{name: "named", keys: comboKeys, rules: namedRules, variants: []comboVariant{
		plainVariant("local", false, 1, agreeFull),
		plainVariant("redis", true, 1, agreeFull),
		// Named keeps the features of the rule it names (algo.CapabilitiesOf looks through
		// Unwrap): the denial cache and leasing trade as they do for the bare rule.
		plainVariant("redis-denial-cache", true, 1, agreeGranted, withDenialCache),
		leasingVariant("redis-leasing", true, 1, nil),
		observed(plainVariant("", true, 1, agreeGranted, withDenialCache), "redis-denial-cache-observed"),
	}},
	// Case 7: two rules of a composite meet on one key; they must count as if each had a
	// store of its own (the reference).
	{name: "composite-keys", fams: comboRateFamilies, keys: comboCompositeKeys, rules: compositeRules, variants: []comboVariant{
		plainVariant("local", false, 1, agreeGranted),
		plainVariant("redis", true, 1, agreeGranted),
		observed(plainVariant("", false, 1, agreeGranted), "local-observed"),
		plainVariant("redis-denial-cache", true, 1, agreeNone, withDenialCache),
		plainVariant("procs-redis", true, 3, agreeNone),
		leasingVariant("leasing-local", false, 1, nil),
		leasingVariant("leasing-procs-redis", true, 3, nil),
		clustered(plainVariant("", true, 1, agreeGranted), "cluster"),
	}},
	{name: "composite-penalty", fams: comboRateFamilies, keys: comboCompositeKeys, rules: func(p *comboPlan) comboRules {
		r := compositeRules(p)
		r.a = comboPenalty(p, r.a, p.v)
		return r
	}, variants: []comboVariant{
		plainVariant("local", false, 1, agreeGranted),
		plainVariant("redis", true, 1, agreeGranted),
	}},
	// A composite whose first rule is in shadow mode (WithShadow: it counts and reports,
	// the caller goes through): the other rule's bound holds, whatever the shadow rule
	// decided, through rollbacks, resets and config changes.
	{name: "composite-shadow", fams: comboRateFamilies, keys: comboCompositeKeys, rules: func(p *comboPlan) comboRules {
		r := compositeRules(p)
		r.shadowA = true
		return r
	}, variants: []comboVariant{
		plainVariant("local", false, 1, agreeGranted),
		plainVariant("redis", true, 1, agreeGranted),
		leasingVariant("leasing-procs-redis", true, 3, nil),
		observed(plainVariant("", false, 1, agreeGranted), "local-observed"),
	}},
	// Case 6: one key of the wrong type must not stop the others.
	{name: "breaker-wrongtype", keys: comboKeys, rules: plainRules, variants: []comboVariant{wrongTypeVariant()}},
	// Refused and hung connections: nothing over-admits, whatever the breaker does.
	{name: "breaker-faults", fams: comboRateFamilies, keys: comboKeys, rules: plainRules, seeds: 4,
		variants: []comboVariant{
			faultVariant("redis"),
			faultVariant("redis-unbatched", withoutBatching),
			faultVariant("redis-denial-cache", withDenialCache),
			leased(faultVariant("redis"), "redis-leasing"),
		}},
	// A composite's rollback under faults: a rule granted, the next one failed or hung.
	{name: "composite-faults", fams: comboRateFamilies, keys: comboCompositeKeys, rules: compositeRules, seeds: 4,
		variants: []comboVariant{faultVariant("redis")}},
	// Case 8: WithClientClock and Redis's TTLs.
	{name: "client-clock-ttl", fams: comboRateFamilies, keys: comboKeys, kinds: comboLagKinds, rules: plainRules, long: 2,
		variants: []comboVariant{clientClockVariant(), leased(clientClockVariant(), "redis-leasing")}},
}
