package limiter_test

// The model-based test over the combinations users build (issue 21): model_test.go checks
// one rule on one store; every defect found since sat where two features meet (leasing and
// eviction, a penalty inside a penalty, two composite rules on one key, a client clock and
// Redis's TTLs, one bad key and the breaker). A combo is such a meeting: a rule (plain,
// Penalty, nested Penalty, algo.Named, a composite whose key functions may return equal
// strings) on a stack of stores (local or Redis, leasing, the denial cache, three stores on
// one Redis or on a three-master Redis Cluster as three processes, batching, injected
// faults, observed limiters off the fast paths). Each variant of a combo is a subtest,
// TestModel/<combo>/<variant>, that runs seeded plans of requests, charges, reservations,
// blocking acquires (TryAcquire and WaitN, sleeping on the fake clock; some given up while
// they wait), cancels, refunds, resets, peeks, config changes (SetAlgorithm on every
// process at once) and clock steps on the variant's world beside a reference world (the
// same rule on one local store, no feature), and after every step checks:
//
//   - the bound on used permits (model_bound_test.go), per rule and key, at the instant
//     each grant was usable, plus the trade the variant documents (leasing: processes ×
//     slice, none for a fixed window; docs/distributed.md), from the last Reset of the key;
//   - agreement with the reference where the stores must agree (comboAgree): the full
//     decision (a Peek's too, and how long a TryAcquire slept) for local and Redis without
//     leasing, whether granted for the denial cache, nothing where a trade or a fault lets
//     them differ; a Peek takes nothing, so the steps after it agree as well;
//   - with an Observer (observed), that every AllowN, Reserve and TryAcquire reached it.
//
// Where a correct fix may change what is expected, the model accepts every correct answer:
// a config that Validate refuses (a nested Penalty) ends the plan as passed; a composite's
// rules are compared with the same rules each on a store of its own, which is what "rules
// never meet on one key" means whatever the namespacing.
//
// LIMITER_MODEL_COMBO_SEEDS=n runs seeds 1..n per variant (default 8: each family at least
// once), LIMITER_MODEL_COMBO_STEPS=k steps per plan (default 100); LIMITER_MODEL_SEED=s
// runs only seed s. FuzzModel explores the combos too (header bit 0x08, model_test.go).
// Leasing shards its table by a hash seeded at random per process, so which leases evict
// which varies between runs: a leasing-evict failure names its seed but may need a few
// runs to reproduce exactly; its check does not depend on it.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

// comboKind is what one step of a combo plan does.
type comboKind uint8

const (
	cAllow   comboKind = iota // AllowN through the step's process
	cReserve                  // Reserve with a MaxWait (0 too, which leasing serves); an OK one is kept
	cCancel                   // Cancel of a kept reservation, any of them
	cRefund                   // store.Refund of an earlier Allow's grant, as a composite's rollback does
	cReset                    // Limiter.Reset of the key
	cForward                  // the clock moves forward up to 4 scales
	cIdle                     // a long idle gap
	cLag                      // real (server) time passes while the client clock stands still
	cFault                    // the proxy refuses, hangs or heals; a burst on the WRONGTYPE key
	cSet                      // SetAlgorithm on every process: other configs of the plan's rules
	cPeek                     // Peek through the step's process: it takes nothing, so what follows is unchanged
	cWait                     // TryAcquire with a timeout (the step's MaxWait), sleeping on the fake clock
	cCharge                   // Charge: a cAllow turned into one when every rule is chargeable
)

var comboKindNames = [...]string{"allow", "reserve", "cancel", "refund", "reset", "forward", "idle", "lag", "fault", "set", "peek", "wait", "charge"}

// comboKinds weights the kinds of most combos: a byte picks one entry. cLag and cFault
// are no-ops (a forward step) where the variant has no server clock or fault, and cSet
// where a Redis variant must agree with the reference (see runCombo).
var comboKinds = []comboKind{
	cAllow, cAllow, cAllow, cAllow, cAllow, cAllow, cAllow, cAllow, cAllow,
	cReserve, cReserve, cReserve, cCancel, cCancel,
	cRefund, cRefund, cRefund, cReset,
	cForward, cForward, cForward, cForward, cIdle,
	cLag, cFault, cSet, cPeek, cPeek, cWait, cWait,
}

// comboOp is one step of a combo plan.
type comboOp struct {
	kind comboKind
	proc int           // which process makes the call
	key  int           // index into the combo's keys
	n    int64         // permits asked for
	d    time.Duration // MaxWait, or how far the clock moves
	b    byte          // reservation or grant picked (cCancel, cRefund), fault (cFault)
}

func (o comboOp) String(keys []string) string {
	name := comboKindNames[o.kind]
	switch o.kind {
	case cForward, cIdle, cLag:
		return fmt.Sprintf("%s(%v)", name, o.d)
	case cCancel, cRefund, cFault, cSet:
		return fmt.Sprintf("%s(%d) p%d", name, o.b, o.proc)
	case cReset, cPeek:
		return fmt.Sprintf("%s(%q) p%d", name, keys[o.key], o.proc)
	}
	return fmt.Sprintf("%s(%q n=%d maxWait=%v) p%d", name, keys[o.key], o.n, o.d, o.proc)
}

// comboPlan is one run of a combo: the family, its config byte, a variant byte (slice,
// penalty, second rule), and the steps.
type comboPlan struct {
	c      *combo
	fam    modelFamily
	first  byte
	v      byte
	resets bool // some step is a cReset
	// charge: a quarter of the cAllow are Charges (by their unused byte b), when every rule
	// states algo.Chargeable: a combo is walked with charges once its algorithm states it.
	charge bool
	ops    []comboOp
}

// decodeCombo turns bytes into a plan of combo c: three bytes of header (family, config,
// variant), then four per step. fam ≥ 0 forces the family (an index into c.families()).
func decodeCombo(c *combo, data []byte, fam int) comboPlan {
	var hdr [3]byte
	copy(hdr[:], data)
	fams := c.families()
	if fam < 0 {
		fam = int(hdr[0]) % len(fams)
	}
	p := comboPlan{c: c, fam: fams[fam], first: hdr[1], v: hdr[2]}
	kinds := c.kinds
	if kinds == nil {
		kinds = comboKinds
	}
	rules := c.rules(&p)
	p.charge = chargeable(rules.a) && (rules.b == nil || chargeable(rules.b))
	scale := p.fam.scale
	for rest := data[min(3, len(data)):]; len(rest) >= 4; rest = rest[4:] {
		k, a, b, x := rest[0], rest[1], rest[2], rest[3]
		o := comboOp{kind: kinds[int(k)%len(kinds)], key: int(a) % len(c.keys), b: b}
		o.n = []int64{1, 1, 1, 1, 2, 3, 5}[int(x>>2)%7]
		if o.kind == cAllow && p.charge && b%4 == 3 {
			o.kind, o.n = cCharge, o.n*4 // past what is left, often
		}
		o.proc = int(x) % c.procs()
		switch o.kind {
		case cReserve, cWait:
			o.d = []time.Duration{0, 0, scale / 2, 2 * scale}[int(b)%4]
		case cForward:
			o.d = scale*time.Duration(b)/64 + time.Duration(x%7)*137
		case cIdle:
			o.d = 10*time.Second + time.Duration(b)*100*time.Millisecond
		case cLag:
			o.d = time.Duration(b) * 6 * time.Millisecond // up to 1.53 s, capped by modelClientLag
		case cReset:
			p.resets = true
		}
		p.ops = append(p.ops, o)
	}
	return p
}

// chargeable reports whether a states algo.Chargeable.
func chargeable(a algo.Algorithm) bool { return algo.CapabilitiesOf(a)&algo.Chargeable != 0 }

// combo is one meeting of features: the rule, the keys and steps its plans use, and the
// store stacks (variants) it runs on, each a subtest.
type combo struct {
	name     string
	fams     []string // the families it runs; nil: every family
	keys     []string
	kinds    []comboKind // nil: comboKinds
	rules    func(p *comboPlan) comboRules
	variants []comboVariant
	seeds    int // default seeds per variant; 0: comboSeeds
	long     int // steps per plan × long (0: 1): a seam that needs a long history
}

// seedsOf is the default number of seeds of variant v of c.
func (c *combo) seedsOf(v *comboVariant) int {
	switch {
	case v.seeds > 0:
		return v.seeds
	case c.seeds > 0:
		return c.seeds
	}
	return comboSeeds
}

// procs is the most processes any variant runs; a step's process is taken modulo a
// world's own count.
func (c *combo) procs() int { return 3 }

// families returns the families c runs.
func (c *combo) families() []modelFamily {
	if c.fams == nil {
		return modelFamilies
	}
	var out []modelFamily
	for _, f := range modelFamilies {
		for _, name := range c.fams {
			if f.name == name {
				out = append(out, f)
			}
		}
	}
	return out
}

// comboRules is what a plan limits with: rule a, and b for a composite All(a on the key's
// user part, b on its endpoint part); bound* are the configs whose bound applies (the
// rule unwrapped: a Penalty or a Named rule grants no more than its Rule).
type comboRules struct {
	a, boundA algo.Algorithm
	b, boundB algo.Algorithm // nil: one rule
	shadowA   bool           // a composite's rule a is in shadow mode: it bounds nothing
}

// Defaults of the combo runs (see the file comment for the environment variables).
const (
	comboSeeds = 8
	comboSteps = 100
)

// comboName gives a failure's first line: the plan and the step.
func comboName(p *comboPlan, v *comboVariant, seed int) string {
	return fmt.Sprintf("%s/%s seed %d (%s, config byte %d, variant byte %d)", p.c.name, v.name, seed, p.fam.name, p.first, p.v)
}

// runComboSeeds runs the seeds of variant v of c and reports failures as TestModel does.
func runComboSeeds(t *testing.T, env *comboEnv, c *combo, v *comboVariant, seeds []int, steps int) {
	var failed []string
	fams := c.families()
	for _, seed := range seeds {
		data := seededBytes(uint64(seed), 100+len(c.name), steps)
		p := decodeCombo(c, data, (seed-1)%len(fams))
		msg := runCombo(env, &p, v, fmt.Sprintf("combo:%s:%s:%d:", c.name, v.name, seed))
		if msg == "" {
			continue
		}
		failed = append(failed, fmt.Sprintf("seed %d: %s", seed, strings.SplitN(msg, "\n", 2)[0]))
		if len(failed) <= 2 {
			t.Errorf("%s (rerun: LIMITER_MODEL_SEED=%d go test -run 'TestModel/%s/%s$' .): %s",
				comboName(&p, v, seed), seed, c.name, v.name, msg)
		}
	}
	if len(failed) > 0 {
		t.Errorf("%s/%s: %d of %d seeds failed:\n%s", c.name, v.name, len(failed), len(seeds), strings.Join(failed, "\n"))
	}
}

// runCombo runs plan p on the reference world and on variant v's, and returns "" or the
// first failure with the tail of the run.
func runCombo(env *comboEnv, p *comboPlan, v *comboVariant, prefix string) string {
	rules := p.c.rules(p)
	ref, err := newComboWorld(env, p, rules, nil, "")
	if err != nil {
		if refused(err) {
			return "" // Validate refuses the config: every store refuses it alike
		}
		return fmt.Sprintf("setup reference: %v", err)
	}
	defer ref.close()
	w, err := newComboWorld(env, p, rules, v, prefix)
	if err != nil {
		return fmt.Sprintf("setup %s: %v (the reference accepted the config)", v.name, err)
	}
	defer w.close()
	var tail []string
	fail := func(step int, format string, args ...any) string {
		return fmt.Sprintf("step %d %s: %s\nrules: %v / %v; last steps (%s):\n  %s", step, p.ops[step].String(p.c.keys),
			fmt.Sprintf(format, args...), rules.a, rules.b, v.name, strings.Join(tail, "\n  "))
	}
	for step, o := range p.ops {
		if o.kind == cSet && v.redis && v.agree != agreeNone && w.ttl == nil {
			// After a config change the reference forgets a state that was fresh under the
			// old config (the local store's expiry) and decides under the new one from a
			// fresh state, where this Redis keeps every key (redistest.WithoutExpiry) and
			// refills the old state: both within the bound, not the same answer. A variant
			// that must agree with the reference on Redis skips the change.
			o.kind = cForward
		}
		ro, err := ref.do(step, o)
		if err != nil {
			return fail(step, "reference: %v", err)
		}
		wo, err := w.do(step, o)
		line := fmt.Sprintf("%3d %s → %s", step, o.String(p.c.keys), wo.full)
		if tail = append(tail, line); len(tail) > 16 {
			tail = tail[1:]
		}
		if err != nil {
			return fail(step, "%s: %v", v.name, err)
		}
		// Only the step's key can newly break its bound: a give-back or a Reset only
		// removes grants from what is checked.
		keys := ref.histKeys(p.c.keys[o.key])
		if msg := ref.checkBound(keys); msg != "" {
			return fail(step, "reference store: %s", msg)
		}
		if msg := w.checkBound(keys); msg != "" {
			return fail(step, "%s: %s", v.name, msg)
		}
		switch v.agree {
		case agreeFull:
			if wo.full != ro.full {
				return fail(step, "the stores disagree:\n    reference: %s\n    %s: %s", ro.full, v.name, wo.full)
			}
		case agreeGranted:
			if wo.granted != ro.granted {
				return fail(step, "the stores disagree on what is granted:\n    reference: %s\n    %s: %s", ro.full, v.name, wo.full)
			}
		}
	}
	return ""
}
