package algo

import (
	_ "embed" // the penalty's half of its Lua twin
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/ratekit/limiter/internal/luawire"
)

// Penalty blocks a key that exceeds Rule for a while: every request Rule denies (an
// offence) blocks the key for Block, and while it is blocked every request is denied
// without asking Rule. With Growth > 1 repeat offences block for longer: each offence
// committed while the previous one is remembered blocks for the previous block × Growth
// (rounded down to whole µs), at most MaxBlock. An offence is remembered until MaxBlock
// has passed since its block ended; after that the next offence blocks for Block again.
// With Growth 1 every block lasts Block and nothing is remembered past it.
//
// What is and is not an offence: a request Rule denies with RetryAfter [Never] (larger than
// Rule can ever grant) is not one; any other denial is, whatever its MaxWait. Grants and
// refunds never change the penalty; Refund gives back to Rule as usual.
//
// A Charge ([Request].Charge; a Penalty is [Chargeable] when Rule is) goes to Rule whether
// the key is blocked or not: the usage happened, and a block that dropped it would let the
// key through at its end as if nothing had been used. It is never an offence and never
// changes the penalty, however far past the limit it takes Rule; the requests its debt
// leaves denied are offences, as every denial is. Its Decision is Rule's, with, while the
// key is blocked, Remaining 0 and RetryAfter the later of the end of the block and Rule's.
//
// A blocked decision does not touch Rule's state. It reports Limit as Rule would,
// Remaining 0, RetryAfter the later of the end of the block and Rule's RetryAfter for the
// request (Never when the request asks for more than Limit), and ResetAfter the later of Rule's and the end of what the penalty
// remembers; it is read from a copy of Rule's state ([CloneState]; a custom state that
// cannot be copied reports Limit 0 and the penalty's end alone). A denial that starts a
// block reports Remaining 0 and the later of Rule's RetryAfter and the block.
//
// The state is Rule's plus the penalty's (when the block ends, how long it lasted), under
// Rule's slot with ":penalty" appended, so it never mixes with Rule used unwrapped. On
// Redis the penalty is decided in the same script as Rule ([Penalty.Script]) and kept in
// one more key; locally under the same lock. A denial that starts a block writes state,
// which its capability [WritesOnDenial] tells a store.
//
// In a composite (several rules applied all or nothing) a denial keeps no state, so a
// Penalty there records no offence: use it as a rule of its own.
type Penalty struct {
	Rule     Algorithm     // the limit whose denials are offences
	Block    time.Duration // how long the first offence blocks the key; > 0, whole µs
	Growth   float64       // factor applied to the block per remembered offence; 1 (or 0) = fixed
	MaxBlock time.Duration // the longest block, ≥ Block; 0 = Block
}

// Compile-time checks.
var (
	_ Scripted    = Penalty{}
	_ capable     = Penalty{}
	_ StateCloner = (*penaltyState)(nil)
)

// penaltyState is Rule's state and the penalty's: block > 0 while an offence is
// remembered (see Penalty), until the instant in µs its block ends.
type penaltyState struct {
	inner State
	until int64
	block int64
}

// CloneState returns a deep copy (nil when Rule's state cannot be copied).
func (s *penaltyState) CloneState() State {
	in := cloneState(s.inner)
	if in == nil && s.inner != nil {
		return nil
	}
	return &penaltyState{inner: in, until: s.until, block: s.block}
}

// Name returns "penalty-" + Rule's Name (the store caches one script per Name).
func (p Penalty) Name() string {
	if p.Rule == nil {
		return "penalty"
	}
	return "penalty-" + p.Rule.Name()
}

// Validate reports a nil or invalid Rule, a Rule that is or wraps (through Unwrap, as
// [Named] does) another Penalty, a Block that is not > 0 and a whole number of µs
// up to MaxMicros µs, a Growth below 1 (other than 0), not finite or above 1e6, or a
// MaxBlock below Block or beyond MaxMicros µs.
func (p Penalty) Validate() error {
	if p.Rule == nil {
		return fmt.Errorf("%w: Penalty.Rule is nil", ErrInvalidConfig)
	}
	if err := p.Rule.Validate(); err != nil {
		return err
	}
	if err := notNested(p.Rule); err != nil {
		return err
	}
	b, err := windowMicros("Penalty.Block", p.Block)
	if err != nil {
		return err
	}
	if p.Growth != 0 && !(p.Growth >= 1 && p.Growth <= 1e6) {
		return fmt.Errorf("%w: Penalty.Growth must be in [1, 1e6] (or 0 for 1), got %v", ErrInvalidConfig, p.Growth)
	}
	if p.MaxBlock != 0 {
		m, err := windowMicros("Penalty.MaxBlock", p.MaxBlock)
		if err != nil {
			return err
		}
		if m < b {
			return fmt.Errorf("%w: Penalty.MaxBlock %v is below Block %v", ErrInvalidConfig, p.MaxBlock, p.Block)
		}
	}
	return nil
}

// notNested reports a Penalty in rule's Unwrap chain. Each layer would keep its penalty in
// its own Go state but, on Redis, in one key (rule's keys + ":pen"), so a nested Penalty
// would decide differently on the two stores; a single Penalty with Growth > 1 is what
// repeat offences call for.
func notNested(rule Algorithm) error {
	for a := rule; a != nil; a = unwrapAlgorithm(a) {
		switch a.(type) {
		case Penalty, *Penalty:
			return fmt.Errorf("%w: Penalty.Rule %v is or wraps another Penalty, which is not supported: "+
				"use one Penalty, with Growth > 1 for longer repeat blocks", ErrInvalidConfig, rule)
		}
	}
	return nil
}

// penaltySlots interns Rule's slot + ":penalty": stores call Slot on their hot path.
var penaltySlots sync.Map // string -> string

// Slot returns Rule's Slot + ":penalty".
func (p Penalty) Slot() string {
	if p.Rule == nil {
		return "penalty"
	}
	in := p.Rule.Slot()
	if v, ok := penaltySlots.Load(in); ok {
		return v.(string)
	}
	s := in + ":penalty"
	if len(in) <= 128 { // window slots are few; bound what a hostile config could add
		penaltySlots.Store(in, s)
	}
	return s
}

// NewState returns Rule's fresh state and no penalty.
func (p Penalty) NewState() State {
	if p.Rule == nil {
		return &penaltyState{}
	}
	return &penaltyState{inner: p.Rule.NewState()}
}

// capabilities returns WritesOnDenial, whatever Rule's: a denial writes state (it may
// start a block), so it may not be answered from a cache, and a slice taken by a lease but
// denied would be an offence that no request committed. It adds Chargeable when Rule states
// it: a charge goes to Rule (see Penalty).
func (p Penalty) capabilities() Capability {
	if p.Rule != nil && CapabilitiesOf(p.Rule)&Chargeable != 0 {
		return WritesOnDenial | Chargeable
	}
	return WritesOnDenial
}

// blockMicros, maxMicros and memory are the config in µs; memory is how long after a
// block ends its offence is remembered (0 with Growth 1).
func (p Penalty) blockMicros() int64 { return micros(p.Block) }

func (p Penalty) maxMicros() int64 {
	if p.MaxBlock == 0 {
		return p.blockMicros()
	}
	return micros(p.MaxBlock)
}

func (p Penalty) growth() float64 {
	if p.Growth == 0 {
		return 1
	}
	return p.Growth
}

func (p Penalty) memory() int64 {
	if p.growth() > 1 {
		return p.maxMicros()
	}
	return 0
}

// end is how long after now the penalty part of s is fresh again (≤ 0: already).
func (p Penalty) end(s *penaltyState, now int64) int64 {
	if s.block == 0 {
		return 0
	}
	return s.until + p.memory() - now
}

// durMicros is a Decision's duration in µs, Never as MaxMicros.
func durMicros(d time.Duration) int64 {
	if d == Never {
		return MaxMicros
	}
	return int64(d / time.Microsecond)
}

// Apply answers req: denied while blocked; otherwise Rule decides, and a denial that is an
// offence starts a block.
func (p Penalty) Apply(st State, now int64, req Request) Decision {
	s := st.(*penaltyState)
	if p.Rule == nil {
		return Decision{RetryAfter: Never}
	}
	if req.Charge {
		return p.charge(s, now, req)
	}
	if s.block > 0 && now < s.until {
		var limit, reset int64
		retry := s.until - now
		if c := cloneState(s.inner); c != nil {
			probe := p.Rule.Apply(c, now, Request{N: math.MaxInt64})
			limit, reset = probe.Limit, durMicros(probe.ResetAfter)
			// The block does not touch Rule's state: the request is granted once the
			// block is over and Rule would grant it, not before (a retry at the end of
			// the block that Rule denies would be a new offence).
			if d := p.Rule.Apply(cloneState(s.inner), now, req); !d.Allowed {
				retry = max(retry, durMicros(d.RetryAfter))
			}
		}
		if req.N > limit {
			retry = MaxMicros
		}
		return Decision{Limit: limit, RetryAfter: toDuration(retry), ResetAfter: toDuration(max(reset, p.end(s, now)))}
	}
	d := p.Rule.Apply(s.inner, now, req)
	if d.Allowed || d.RetryAfter == Never {
		if e := p.end(s, now); e > 0 {
			d.ResetAfter = toDuration(max(durMicros(d.ResetAfter), e))
		}
		return d
	}
	b := p.blockMicros()
	if s.block > 0 && now < s.until+p.memory() {
		if nb := float64(s.block) * p.growth(); nb >= float64(p.maxMicros()) {
			b = p.maxMicros()
		} else {
			b = int64(nb) // floor: nb is positive
		}
	}
	s.until, s.block = now+b, b
	return Decision{
		Limit:      d.Limit,
		RetryAfter: toDuration(max(durMicros(d.RetryAfter), b)),
		ResetAfter: toDuration(max(durMicros(d.ResetAfter), p.end(s, now))),
	}
}

// charge records req with Rule, blocked or not, and leaves the penalty as it is (see
// Penalty). While blocked, no request is granted before the block ends, so Remaining is 0
// and RetryAfter the later of the block's end and Rule's (Rule's RetryAfter of a charge is
// for one permit, which the block then grants).
func (p Penalty) charge(s *penaltyState, now int64, req Request) Decision {
	d := p.Rule.Apply(s.inner, now, req)
	if s.block > 0 && now < s.until {
		d.Remaining = 0
		d.RetryAfter = toDuration(max(s.until-now, durMicros(d.RetryAfter)))
	}
	if e := p.end(s, now); e > 0 {
		d.ResetAfter = toDuration(max(durMicros(d.ResetAfter), e))
	}
	return d
}

// Refund refunds with Rule; the penalty is unchanged.
func (p Penalty) Refund(st State, now int64, n int64, at int64) {
	if p.Rule != nil {
		p.Rule.Refund(st.(*penaltyState).inner, now, n, at)
	}
}

// Unwrap returns Rule, so that QuotaOf describes a Penalty by its Rule.
func (p Penalty) Unwrap() Algorithm { return p.Rule }

// String describes the penalty and its rule.
func (p Penalty) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Penalty{Rule:%v Block:%v", p.Rule, p.Block)
	if p.Growth > 1 {
		fmt.Fprintf(&b, " Growth:%v MaxBlock:%v", p.Growth, p.MaxBlock)
	}
	b.WriteByte('}')
	return b.String()
}

//go:embed penalty.lua
var penaltyLua string

// penaltyScripts caches one *Script per Rule script: stores cache scripts by pointer.
var penaltyScripts sync.Map // *Script -> *Script

// Script returns the Lua twin: Rule's script run as a function, before and after which the
// penalty reads and writes one more key (Rule's keys + ":penalty"). It is nil when Rule
// has no Lua twin.
func (p Penalty) Script() *Script {
	in, ok := p.Rule.(Scripted)
	if !ok {
		return nil
	}
	is := in.Script()
	if v, ok := penaltyScripts.Load(is); ok {
		return v.(*Script)
	}
	v, _ := penaltyScripts.LoadOrStore(is, penaltyScript(is))
	return v.(*Script)
}

// penaltyScript composes the penalty's script around inner: inner's whole source becomes
// the body of a Lua function taking its own KEYS and ARGV (a top-level return returns
// from it), which penalty.lua calls with the keys and arguments of inner alone. When
// inner follows the module's composition rule (it starts with luawire.BaseLua: a script
// of this package), so does the penalty's: the base, the function inner, then
// penalty.lua, which ends with `return serve(call)`, and penalty.lua hands ARGV[2] ("now
// pad" included) to inner unchanged. Another inner comes first, before the base: the
// store then sends the penalty as it sends inner, with a plain now.
func penaltyScript(inner *Script) *Script {
	fn := "local function inner(KEYS, ARGV)\n" + inner.Source + "\nend\n"
	src := fn + luawire.BaseLua + penaltyLua
	if strings.HasPrefix(inner.Source, luawire.BaseLua) {
		src = luawire.BaseLua + fn + penaltyLua
	}
	return &Script{
		Name:   "penalty-" + inner.Name,
		Source: src,
		Keys:   append(append([]string(nil), inner.Keys...), penaltyKeySuffix),
	}
}

// penaltyKeySuffix names the key holding the penalty beside Rule's.
const penaltyKeySuffix = ":pen"

// AppendArgs appends Rule's config, then Block, MaxBlock (µs) and Growth, which the script
// reads from the end of ARGV.
func (p Penalty) AppendArgs(args []any) []any {
	if in, ok := p.Rule.(Scripted); ok {
		args = in.AppendArgs(args)
	}
	return append(args, p.blockMicros(), p.maxMicros(), formatFloat(p.growth()))
}

// Samples (see Samples): a rule of every rate algorithm, fixed and growing blocks, and
// one renamed by Named.
var _ = sample(
	Penalty{Rule: FixedWindow{Limit: 3, Window: time.Second}, Block: 2 * time.Second},
	Penalty{Rule: SlidingWindowLog{Limit: 2, Window: 10 * time.Millisecond}, Block: 15 * time.Millisecond,
		Growth: 2, MaxBlock: 200 * time.Millisecond},
	Penalty{Rule: SlidingWindowCounter{Limit: 10, Window: time.Second}, Block: 700 * time.Millisecond,
		Growth: 1.7, MaxBlock: 10 * time.Second},
	Penalty{Rule: TokenBucket{Rate: 1e6 / 7, Burst: 3}, Block: 29 * time.Microsecond, Growth: 3, MaxBlock: time.Millisecond},
	Penalty{Rule: LeakyBucket{Rate: 10, Capacity: 5}, Block: 333 * time.Millisecond},
	Penalty{Rule: GCRA{Rate: 3, Burst: 2}, Block: time.Second, Growth: 1.5, MaxBlock: 4 * time.Second},
	Named(Penalty{Rule: TokenBucket{Rate: 10, Burst: 5}, Block: 250 * time.Millisecond, Growth: 2,
		MaxBlock: 3 * time.Second}, "abuse"),
)
