package limiter_test

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/ratekit/limiter/algo"
)

// modelFamily is one algorithm under test: configs that all share one Slot (so a
// SetAlgorithm keeps the keys' state) and the time scale its steps move the clock by.
type modelFamily struct {
	name   string
	config func(b byte) algo.Algorithm
	scale  time.Duration // a typical step: the window, or the time to refill a few permits
	// keep: forgetting a key is not transparent, so the local store must not (no sweep, no
	// eviction) while Redis keeps every key. SmoothBursty is the documented exception to
	// "a state kept past its ResetAfter decides like a fresh one": a key forgotten after its
	// linger starts with no stored permits, one kept has saved up a burst.
	keep bool
}

// Rates and sizes the configs pick from: slow and fast, with intervals that are not whole
// µs, and sizes from 1 (every permit waits) to 100 (a burst to mis-scale).
var (
	modelRates = []float64{50, 100, 1e3 / 3, 1000, 1e6 / 7}
	modelSizes = []int64{1, 2, 3, 5, 8, 13, 100}
)

func modelRate(b byte) float64 { return modelRates[int(b)%len(modelRates)] }
func modelSize(b byte) int64   { return modelSizes[int(b/8)%len(modelSizes)] }

var modelFamilies = []modelFamily{
	{"fixed-window", func(b byte) algo.Algorithm {
		return algo.FixedWindow{Limit: modelSize(b), Window: 10 * time.Millisecond}
	}, 10 * time.Millisecond, false},
	{"sliding-log", func(b byte) algo.Algorithm {
		return algo.SlidingWindowLog{Limit: modelSize(b), Window: 7 * time.Millisecond}
	}, 7 * time.Millisecond, false},
	{"sliding-counter", func(b byte) algo.Algorithm {
		return algo.SlidingWindowCounter{Limit: modelSize(b), Window: 11 * time.Millisecond}
	}, 11 * time.Millisecond, false},
	{"token-bucket", func(b byte) algo.Algorithm {
		return algo.TokenBucket{Rate: modelRate(b), Burst: modelSize(b)}
	}, 20 * time.Millisecond, false},
	{"gcra", func(b byte) algo.Algorithm {
		return algo.GCRA{Rate: modelRate(b), Burst: modelSize(b)}
	}, 20 * time.Millisecond, false},
	{"leaky-bucket", func(b byte) algo.Algorithm {
		return algo.LeakyBucket{Rate: modelRate(b), Capacity: modelSize(b)}
	}, 20 * time.Millisecond, false},
	{"smooth-bursty", func(b byte) algo.Algorithm {
		return algo.SmoothBursty{Rate: modelRate(b), MaxBurstSeconds: float64(b%4) * 0.05}
	}, 20 * time.Millisecond, true},
	{"smooth-warming-up", func(b byte) algo.Algorithm {
		return algo.SmoothWarmingUp{Rate: modelRate(b), Warmup: time.Duration(b%5) * 50 * time.Millisecond,
			ColdFactor: float64(b%3) + 1}
	}, 20 * time.Millisecond, false},
}

// modelKind is what one step of a run does.
type modelKind uint8

const (
	kAllow   modelKind = iota // AllowN
	kReserve                  // Reserve with a MaxWait; an OK reservation is kept
	kCancel                   // Cancel of a kept reservation, any of them (out of order)
	kWait                     // WaitN, sleeping the whole wait (the fake clock moves)
	kWaitCut                  // WaitN whose context is cancelled part-way through its sleep
	kTryCut                   // TryAcquire whose context is cancelled part-way through its sleep
	kTry                      // TryAcquire with a timeout
	kSet                      // SetAlgorithm: another config of the same slot
	kForward                  // the clock moves forward up to 4 scales
	kBack                     // the clock steps back up to 2 scales
	kIdle                     // a long idle gap: every key's state is back to fresh
	kFlood                    // Allow on many new keys: the local store must evict
	kSweep                    // the local store forgets the keys whose state is fresh
	kCharge                   // Charge: an AllowN turned into one by a plan that charges
)

var modelKindNames = [...]string{"allow", "reserve", "cancel", "wait", "wait-cut", "try-cut",
	"try", "set", "forward", "back", "idle", "flood", "sweep", "charge"}

// modelKinds weights the kinds: a byte picks one entry.
var modelKinds = []modelKind{
	kAllow, kAllow, kAllow, kAllow, kAllow, kAllow, kAllow,
	kReserve, kReserve, kReserve, kReserve, kReserve,
	kCancel, kCancel, kCancel, kCancel,
	kWait, kWait, kWaitCut, kWaitCut, kTryCut, kTryCut, kTry,
	kSet, kSet,
	kForward, kForward, kForward, kForward, kBack, kBack,
	kIdle, kFlood, kSweep, kSweep,
}

// modelOp is one step.
type modelOp struct {
	kind modelKind
	key  int           // which tracked key
	n    int64         // permits asked for
	d    time.Duration // MaxWait, timeout, or how far the clock moves
	b    byte          // config (kSet), reservation (kCancel), sleep cut (k*Cut), keys (kFlood)
	all  bool          // a request on the composite All(limiter, global rule)
}

func (o modelOp) String() string {
	switch o.kind {
	case kSweep:
		return "sweep"
	case kSet, kCancel, kFlood:
		return fmt.Sprintf("%s(%d)", modelKindNames[o.kind], o.b)
	case kForward, kBack, kIdle:
		return fmt.Sprintf("%s(%v)", modelKindNames[o.kind], o.d)
	}
	name := modelKindNames[o.kind]
	if o.all {
		name = "all-" + name
	}
	if o.kind == kWaitCut || o.kind == kTryCut {
		return fmt.Sprintf("%s(key%d n=%d timeout=%v cut=%d/256)", name, o.key, o.n, o.d, o.b)
	}
	return fmt.Sprintf("%s(key%d n=%d maxWait=%v)", name, o.key, o.n, o.d)
}

// modelPlan is a whole run: the family, its first config, whether the local store is
// bounded (and so evicts), whether the config changes, and the steps.
type modelPlan struct {
	fam   modelFamily
	first byte
	evict bool
	fixed bool // no SetAlgorithm: a failure is then none of a config change's doing
	all   bool // some requests go through a composite (never with evict: one tracked key)
	// charge: a quarter of the AllowN are Charges (by their unused byte b), for a family
	// that states algo.Chargeable: an algorithm is walked with charges once it states it.
	charge bool
	ops    []modelOp
}

// decodePlan turns bytes into a plan: the fuzz target's input, and the seeded runs' (from
// a seeded generator). Two bytes of header, then four bytes per step; a short tail is
// ignored, and fam ≥ 0 forces the family. Header byte 0: family (low bits), composite
// requests (0x10), no config change (0x20), eviction (0xc0 both set).
func decodePlan(data []byte, fam int) modelPlan {
	var hdr [2]byte
	copy(hdr[:], data)
	if fam < 0 {
		fam = int(hdr[0]) % len(modelFamilies)
	}
	p := modelPlan{fam: modelFamilies[fam], first: hdr[1], fixed: hdr[0]&0x20 != 0,
		evict: hdr[0]&0xc0 == 0xc0 && !modelFamilies[fam].keep}
	p.all = hdr[0]&0x10 != 0 && !p.evict
	p.charge = algo.CapabilitiesOf(p.fam.config(p.first))&algo.Chargeable != 0
	scale := p.fam.scale
	for rest := data[min(2, len(data)):]; len(rest) >= 4; rest = rest[4:] {
		k, a, b, c := rest[0], rest[1], rest[2], rest[3]
		o := modelOp{kind: modelKinds[int(k)%len(modelKinds)], key: int(a & 1), b: c}
		o.n = []int64{1, 1, 1, 1, 2, 3, 5, 8, 13, 50, 100, 101}[int(a>>1)%12]
		if o.kind == kSet && p.fixed {
			o.kind = kAllow
		}
		if p.evict {
			o.key = 0 // one tracked key: evicting one of two equally near fresh is random
		}
		if o.kind == kAllow && p.charge && b%4 == 3 {
			o.kind = kCharge
		}
		switch o.kind {
		case kAllow, kReserve, kWait, kWaitCut, kTry, kTryCut, kCharge:
			o.all = p.all && c&0x80 != 0
		}
		switch o.kind {
		case kReserve, kTry, kTryCut:
			o.d = []time.Duration{0, scale / 2, 2 * scale, 20 * scale, algo.Forever}[int(b)%5]
		case kForward:
			// Odd nanoseconds too: the facade times reservations in ns, the stores in µs.
			o.d = scale*time.Duration(b)/64 + time.Duration(c%7)*137
		case kBack:
			o.d = scale * time.Duration(b) / 128
		case kIdle:
			o.d = 10*time.Second + time.Duration(b)*100*time.Millisecond
		case kSweep:
			if p.fam.keep {
				o.kind, o.d = kForward, scale/4
			}
		case kFlood:
			if !p.evict {
				o.kind, o.d = kForward, scale/4 // keeps the stores comparable (Redis never evicts)
			}
		}
		p.ops = append(p.ops, o)
	}
	return p
}

// seededBytes is the input of a seed: a header and steps steps from a seeded generator
// (stream picks one of its independent sequences).
func seededBytes(seed uint64, stream, steps int) []byte {
	rng := rand.New(rand.NewPCG(seed, 0x6d6f64656c+uint64(stream)))
	data := make([]byte, 2+4*steps)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	return data
}

// seededPlan is the plan of a seed for family fam (each family its own stream of steps).
func seededPlan(seed uint64, fam, steps int) modelPlan {
	return decodePlan(seededBytes(seed, fam, steps), fam)
}
