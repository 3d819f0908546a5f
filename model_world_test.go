package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/store"
)

// modelClock is the facade's clock in a model world: a Fake whose next Sleep can be told
// to stop part-way and cancel its caller's context, which is a Wait cancelled mid-sleep,
// deterministically (no goroutine, no real time).
type modelClock struct {
	*clockx.Fake
	cut    byte               // the fraction cut/256 of the sleep passes before the cancel
	cancel context.CancelFunc // non-nil: the next Sleep of d > 0 is cut
}

func (c *modelClock) Sleep(ctx context.Context, d time.Duration) error {
	if c.cancel == nil || d <= 0 || ctx.Err() != nil {
		return c.Fake.Sleep(ctx, d)
	}
	part := (d * time.Duration(c.cut) / 256).Truncate(time.Microsecond)
	c.Fake.Add(part) // < d: the permits are not yet usable, so the refund is due
	c.cancel()
	c.cancel = nil
	return ctx.Err()
}

// modelRecorder is the store a world's limiter talks to: it passes every call on and
// records, for the tracked keys, each grant and refund (whatever facade call made it) and
// a trace of the calls, which the cross-store check compares.
type modelRecorder struct {
	store.Store
	tracked map[string]*modelHistory
	step    int
	trace   []string
	ttl     *modelTTL // the Redis world's TTLs on the tracked keys; nil for the local store
	// expiry: the instant and config of each tracked key's last grant, from the decisions
	// (the same in every world), and floor, the world's: a call under another config past
	// that instant may find the state expired, an expiry like kIdle's, which moves the
	// floor that kBack never steps back over. In a plan that evicts, so may a call under
	// the same config: the bounded store drops an idle overflow state or entry at any call.
	expiry map[string]modelTTLKey
	evict  bool
	clk    *clockx.Fake
	floor  *time.Time
	// fullDenies: the store is bounded (WithMaxKeys, a plan that evicts), so a charge of
	// a new key that finds it full is denied for an algorithm that is not
	// algo.OverflowSafe (local.Store.Apply: the one charge a store denies).
	fullDenies bool
}

// expiring moves the floor to now when a call under a on key may find its state expired
// (see expiry), and records a grant's instant.
func (r *modelRecorder) expiring(key string, a algo.Algorithm, d *algo.Decision) {
	if r.tracked[key] == nil {
		return
	}
	now := r.clk.Now()
	if d != nil {
		r.expiry[key] = modelTTLKey{fresh: now.UnixMicro() + int64(d.ResetAfter/time.Microsecond), cfg: a}
		return
	}
	if k, ok := r.expiry[key]; ok && k.fresh <= now.UnixMicro() && (r.evict || !reflect.DeepEqual(k.cfg, a)) && now.After(*r.floor) {
		*r.floor = now
	}
}

// refunded notes that a refund on key may have moved its state's fresh instant: a state
// that gave back everything is fresh sooner than its last grant said (a window whose only
// grant was refunded is fresh once it begins), and which config it was written under is
// no longer known. So from now on any call may find it expired (the stores' expiry after a
// refund is tested by the stores' own suites; here it only moves the floor).
func (r *modelRecorder) refunded(key string) {
	if k, ok := r.expiry[key]; ok {
		r.expiry[key] = modelTTLKey{fresh: min(k.fresh, r.clk.Now().UnixMicro())}
	}
}

func (r *modelRecorder) Apply(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	r.expiring(key, a, nil)
	if r.ttl != nil && r.tracked[key] != nil {
		if err := r.ttl.expire(ctx, key, a); err != nil {
			return algo.Decision{}, fmt.Errorf("model TTL: %w", err)
		}
	}
	d, err := r.Store.Apply(ctx, key, a, req)
	if r.ttl != nil && r.tracked[key] != nil && err == nil && d.Allowed {
		r.ttl.granted(key, a, d)
	}
	if err == nil && d.Allowed {
		r.expiring(key, a, &d)
	}
	if h := r.tracked[key]; h != nil {
		r.trace = append(r.trace, fmt.Sprintf("Apply(%s n=%d maxWait=%v charge=%t)=%s%s", key, req.N, req.MaxWait, req.Charge, fmtDecision(d), errSuffix(err)))
		switch {
		case err == nil && req.Charge:
			if !d.Allowed {
				if r.fullDenies && algo.CapabilitiesOf(a)&algo.OverflowSafe == 0 {
					break // recorded nothing: see fullDenies
				}
				return d, fmt.Errorf("model: the store denied a charge: %s", fmtDecision(d))
			}
			h.charged(r.step, 0, req.N, d.At)
		case err == nil && d.Allowed:
			h.grants = append(h.grants, modelGrant{step: r.step, n: req.N, at: d.At})
		}
	}
	return d, err
}

func (r *modelRecorder) Refund(ctx context.Context, key string, a algo.Algorithm, n, at int64) error {
	r.expiring(key, a, nil)
	var before string
	if r.ttl != nil && r.tracked[key] != nil {
		var err error
		if err = r.ttl.expire(ctx, key, a); err == nil {
			before, err = r.ttl.snapshot(ctx, key)
		}
		if err != nil {
			return fmt.Errorf("model TTL: %w", err)
		}
	}
	err := r.Store.Refund(ctx, key, a, n, at)
	if r.ttl != nil && r.tracked[key] != nil && err == nil {
		after, serr := r.ttl.snapshot(ctx, key)
		if serr == nil && after != before {
			serr = r.ttl.refunded(ctx, func(req algo.Request) (algo.Decision, error) {
				return r.Store.Apply(ctx, key, a, req)
			}, key, a)
		}
		if serr != nil {
			return fmt.Errorf("model TTL: %w", serr)
		}
	}
	if h := r.tracked[key]; h != nil {
		r.trace = append(r.trace, fmt.Sprintf("Refund(%s n=%d at=%d)%s", key, n, at, errSuffix(err)))
		if err == nil {
			h.cancel(n, at)
			r.refunded(key)
		}
	}
	return err
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return " err=" + err.Error()
}

func fmtDecision(d algo.Decision) string {
	return fmt.Sprintf("{ok=%v lim=%d rem=%d retry=%v reset=%v wait=%v at=%d}",
		d.Allowed, d.Limit, d.Remaining, d.RetryAfter, d.ResetAfter, d.Wait, d.At)
}

// modelKeys are the tracked keys a plan's op.key picks from; modelGlobal, tracked too, is
// the key of the composite's second rule.
var (
	modelKeys   = [2]string{"a", "b"}
	modelGlobal = "g"
)

// modelWorld is one store under test with its own fake clock, recorder and limiter. Every
// world of a run gets the same steps; they must answer alike.
type modelWorld struct {
	name  string
	fam   modelFamily
	clk   *modelClock
	start time.Time
	rec   *modelRecorder
	lim   *limiter.Limiter
	comp  *limiter.Limiter // All(lim, a rule on modelGlobal)
	// floodLim takes the flood keys: another algorithm on the same store.
	floodLim *limiter.Limiter
	res      []*limiter.Reservation // OK reservations not yet cancelled
	ceil     modelCeiling           // of lim, for modelKeys
	gCeil    modelCeiling           // of the composite's global rule
	flood    int                    // flood keys used so far
	floor    time.Time              // the clock at the last expiry (kIdle, kSweep, kFlood)
	configs  []string               // every config applied so far, the first one included
}

// modelStart is where every world's clock starts: a whole second, as a real instant.
var modelStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// newModelWorld builds a world on the store mk returns for the world's fake clock.
func newModelWorld(name string, p modelPlan, mk func(clockx.Clock) store.Store) (*modelWorld, error) {
	clk := &modelClock{Fake: clockx.NewFake(modelStart)}
	rec := &modelRecorder{Store: mk(clk.Fake), tracked: map[string]*modelHistory{},
		fullDenies: name == "local-bounded" && p.evict}
	for _, k := range modelKeys {
		rec.tracked[k] = &modelHistory{}
	}
	rec.tracked[modelGlobal] = &modelHistory{}
	a := p.fam.config(p.first)
	lim, err := limiter.New(rec, a, limiter.WithClock(clk))
	if err != nil {
		return nil, err
	}
	// The composite's second rule limits every key as one global key, with a config of its
	// own that SetAlgorithm leaves alone: a request on it goes to two keys, so a denial by
	// one refunds the other's grant.
	g := p.fam.config(p.first ^ 0x5a)
	gLim, err := limiter.New(rec, g, limiter.WithClock(clk),
		limiter.WithKeyFunc(func(string) string { return modelGlobal }))
	if err != nil {
		return nil, err
	}
	comp, err := limiter.All(lim, gLim)
	if err != nil {
		return nil, err
	}
	floodLim, err := limiter.New(rec, algo.TokenBucket{Rate: 1e-6, Burst: 1}, limiter.WithClock(clk))
	if err != nil {
		return nil, err
	}
	w := &modelWorld{name: name, fam: p.fam, clk: clk, start: modelStart, floor: modelStart,
		rec: rec, lim: lim, comp: comp, floodLim: floodLim}
	rec.expiry, rec.evict, rec.clk, rec.floor = map[string]modelTTLKey{}, p.evict, clk.Fake, &w.floor
	w.ceil.add(a)
	w.gCeil.add(g)
	w.configs = []string{fmt.Sprint(a)}
	return w, nil
}

// do runs one step and returns what it observed: the facade's answer, the store calls on
// tracked keys, and the clock after the step. An unexpected error ends the run.
func (w *modelWorld) do(step int, o modelOp) (string, error) {
	ctx := context.Background()
	key := modelKeys[o.key]
	w.rec.step, w.rec.trace = step, w.rec.trace[:0]
	w.observe()
	lim := w.lim
	if o.all {
		lim = w.comp
	}
	var res string
	switch o.kind {
	case kAllow:
		d, err := lim.AllowN(ctx, key, o.n)
		if err != nil {
			return "", fmt.Errorf("AllowN: %w", err)
		}
		res = fmtDecision(d)
	case kCharge:
		d, err := lim.Charge(ctx, key, o.n)
		if err != nil {
			return "", fmt.Errorf("Charge: %w", err)
		}
		if !d.Allowed && !(w.rec.fullDenies && algo.CapabilitiesOf(lim.Algorithm())&algo.OverflowSafe == 0) {
			return "", fmt.Errorf("Charge(%d) denied: %s", o.n, fmtDecision(d))
		}
		res = fmtDecision(d)
	case kReserve:
		r, err := lim.Reserve(ctx, key, o.n, o.d)
		if err != nil {
			return "", fmt.Errorf("Reserve: %w", err)
		}
		if r.OK() {
			w.res = append(w.res, r)
		}
		res = fmt.Sprintf("ok=%v delay=%v", r.OK(), r.Delay())
	case kCancel:
		if len(w.res) == 0 {
			return "no reservation", nil
		}
		i := int(o.b) % len(w.res)
		r := w.res[i]
		delay := r.Delay()
		if err := r.Cancel(ctx); err != nil {
			return "", fmt.Errorf("Cancel: %w", err)
		}
		w.res = slices.Delete(w.res, i, i+1)
		res = fmt.Sprintf("cancel #%d (delay %v)", i, delay)
	case kWait, kWaitCut:
		cctx, cancel := context.WithCancel(ctx)
		if o.kind == kWaitCut {
			w.clk.cut, w.clk.cancel = o.b, cancel
		}
		err := lim.WaitN(cctx, key, o.n)
		w.clk.cancel = nil
		cancel()
		if res = errClass(err); res == "" {
			return "", fmt.Errorf("WaitN: %w", err)
		}
		// WaitN retries a denial after its RetryAfter, when the same request must be granted:
		// nothing else happens in between here. One more call absorbs a rounding hair.
		if calls := len(w.rec.trace); !o.all && calls > 3 {
			return "", fmt.Errorf("WaitN took %d store calls: a RetryAfter was too short (first: %s; last: %s)",
				calls, w.rec.trace[0], w.rec.trace[calls-1])
		}
	case kTry, kTryCut:
		cctx, cancel := context.WithCancel(ctx)
		if o.kind == kTryCut {
			w.clk.cut, w.clk.cancel = o.b, cancel
		}
		ok, err := lim.TryAcquire(cctx, key, o.n, o.d)
		w.clk.cancel = nil
		cancel()
		if res = errClass(err); res == "" {
			return "", fmt.Errorf("TryAcquire: %w", err)
		}
		res = fmt.Sprintf("ok=%v %s", ok, res)
	case kSet:
		a := w.fam.config(o.b)
		if err := w.lim.SetAlgorithm(a); err != nil {
			return "", fmt.Errorf("SetAlgorithm(%v): %w", a, err)
		}
		w.ceil.changed(a, step)
		w.observe()
		w.configs = append(w.configs, fmt.Sprintf("%v from step %d", a, step))
		res = fmt.Sprint(a)
	case kForward:
		w.clk.Add(o.d)
	case kIdle, kSweep:
		// Expiry: the local store forgets the keys whose state is fresh again (its sweeper's
		// work, done here on the fake clock), Redis keeps them (no TTL while the fake clock
		// stands still). Either way the next answers must be those of a fresh key.
		w.clk.Add(o.d)
		w.floor = w.clk.Now()
		if s, ok := w.rec.Store.(interface{ Sweep() }); ok && !w.fam.keep {
			s.Sweep()
		}
	case kBack:
		// Never back before the last expiry: the local store has then forgotten keys that
		// Redis, without TTLs here, still holds, and a state answers like a fresh one only
		// from its fresh instant on. (A real TTL forgets them too.)
		w.clk.Add(-min(o.d, w.clk.Now().Sub(w.floor)))
	case kFlood:
		// Enough new keys to fill the bounded local store twice over. Inserting into a full
		// store sweeps it: an expiry, as in kSweep, at any instant of the flood, so the floor
		// is its end (the bounded local store evicts a key that went idle during it).
		for range 2*modelMaxKeys + int(o.b%8) {
			// 1 µs apart, on a bucket that refills in days, so that no two keys become
			// fresh at once: the store evicts the key nearest to fresh, and breaks a tie by
			// map order, at random. The tracked key (only one in these plans) is then
			// evicted whenever it is nearer to fresh than every flood key.
			w.clk.Add(time.Microsecond)
			w.flood++
			if _, err := w.floodLim.Allow(ctx, fmt.Sprintf("flood%d", w.flood)); err != nil {
				return "", fmt.Errorf("Allow(flood): %w", err)
			}
		}
		w.floor = w.clk.Now()
	}
	return fmt.Sprintf("%s; now=+%v; %s", res, w.clk.Now().Sub(w.start), strings.Join(w.rec.trace, "; ")), nil
}

// errClass names the errors a step may end with; "" for any other.
func errClass(err error) string {
	switch {
	case err == nil:
		return "nil"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, limiter.ErrExceedsLimit):
		return "exceeds"
	}
	return ""
}

// observe gives the ceiling the clock reading for its raises (modelCeiling.observe).
func (w *modelWorld) observe() {
	for _, k := range modelKeys {
		w.ceil.observe(k, w.rec.tracked[k], w.clk.Now().UnixMicro())
	}
}

// checkBound returns "" or the first tracked key whose used grants break the bound.
func (w *modelWorld) checkBound() string {
	for _, k := range modelKeys {
		if msg := w.ceil.check(k, w.rec.tracked[k]); msg != "" {
			return fmt.Sprintf("key %q: %s", k, msg)
		}
	}
	if msg := w.gCeil.check(modelGlobal, w.rec.tracked[modelGlobal]); msg != "" {
		return fmt.Sprintf("key %q (the composite's global rule): %s", modelGlobal, msg)
	}
	return ""
}
