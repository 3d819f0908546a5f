package distributed

import (
	"context"
	"hash/maphash"
	"math"
	"sync"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/algocmp"
	deny "github.com/ratekit/limiter/internal/denial"
)

// defaultDenialCacheEntries is the number of (key, slot) pairs a denial cache remembers
// when DenialCache.MaxEntries is 0.
const defaultDenialCacheEntries = 10_000

// DenialCache configures WithDenialCache. The zero value means the defaults.
type DenialCache struct {
	// MaxEntries bounds the (key, slot) pairs remembered, each holding the denials of
	// at most four distinct requests (N, MaxWait). 0 means 10,000;
	// negative is an error. Expired denials are dropped when room is needed.
	MaxEntries int
	// MaxAge caps how long one denial is reused, whatever its RetryAfter: the bound on a
	// late admission after a refund, Reset or rate change made elsewhere (see
	// WithDenialCache). 0 means no cap (a denial is reused until its RetryAfter has
	// passed); negative is an error.
	MaxAge time.Duration
}

// WithDenialCache makes the store answer, without a round trip, a request that Redis
// denied a moment ago, until that denial's RetryAfter has passed: a key hammered far
// beyond its limit then costs Redis about two scripts per refill instead of one per
// request. It applies to Apply (also when batched) with the algorithms that state
// algo.DenialCacheable (every config of package algo but Penalty, whose denials write),
// also wrapped in algo.Named or any wrapper with Unwrap; ApplyAll, Peek, other algorithms
// and configs that == cannot compare (a custom wrapper holding a slice, a map or a func)
// always go to Redis. The default is off.
//
// The cached answer is exact as long as nothing but grants changes the key: a denial
// writes nothing (every algorithm of package algo, in Go and in Lua: see
// docs/distributed.md, "Denial cache"), grants only push the same request's RetryAfter
// later, and a denial of the same request (same N and MaxWait, same config and slot) is
// answered with RetryAfter counted down from the store's deadline, ResetAfter counted down
// likewise, and the Limit and Remaining the store gave. The deadline is counted from
// before the request was sent, so it never falls after the store's: with server time, a
// cached denial is at most one round trip shorter than the store's, never longer.
//
// The one way it can differ: a Refund, a Reset or a rate change made through another
// store (another process) can make the request grantable before the cached deadline.
// Such a request is then denied until the deadline (or MaxAge) passes: a late admission,
// never an over-admission, bounded by the RetryAfter the store gave and by MaxAge. A
// Refund or Reset through this store forgets the key's denials first.
//
// When a denial expires, one caller of this store asks Redis again while the others
// making the same request wait for its answer (they return with their context), so a
// hammered key costs one script per refill, not one per goroutine. c.MaxEntries or
// c.MaxAge below zero is an error.
func WithDenialCache(c DenialCache) Option {
	return optionFunc(func(o *options) {
		if c.MaxEntries < 0 || c.MaxAge < 0 {
			o.invalid("WithDenialCache(%+v): MaxEntries and MaxAge must be ≥ 0 (0: the default)", c)
			return
		}
		o.denials = &c
	})
}

// denialShards spreads the cache over independently locked maps, so that goroutines on
// different keys do not share a lock.
const denialShards = 32

// maxDenials is how many distinct requests one (key, slot) pair remembers.
const maxDenials = 4

type denialCache struct {
	seed     maphash.Seed
	perShard int
	maxAge   int64        // µs; 0: none
	clock    clockx.Clock // nil: monotonic real time since base
	base     time.Time
	shards   [denialShards]denialShard
}

type denialShard struct {
	mu    sync.RWMutex
	epoch uint64 // moved by forget: an answer that raced with a refund is not kept
	m     map[denialKey]*denialItem
	_     [40]byte // keeps two shards' locks off one cache line
}

type denialKey struct{ key, slot string }

// denialItem is what one (key, slot) pair remembers; guarded by its shard's lock.
type denialItem struct {
	a  algo.Algorithm // the config the denials were given under
	ds []denial
	// probing is set while one caller asks Redis again about an expired denial; the
	// others making requests on the pair wait for done.
	probing bool
	done    chan struct{}
	grants  int // consecutive probes granted: at 2 the key is no longer hammered
}

// denial is one denied request and the instants, in the cache's µs, until which it holds
// (internal/denial, shared with package leasing).
type denial struct {
	n       int64
	maxWait time.Duration
	deny.Entry
}

func newDenialCache(c DenialCache, clock clockx.Clock) *denialCache {
	n := c.MaxEntries
	if n == 0 {
		n = defaultDenialCacheEntries
	}
	dc := &denialCache{seed: maphash.MakeSeed(), perShard: (n + denialShards - 1) / denialShards,
		maxAge: int64(c.MaxAge / time.Microsecond), clock: clock, base: time.Now()}
	for i := range dc.shards {
		dc.shards[i].m = make(map[denialKey]*denialItem)
	}
	return dc
}

// now is the cache's time in µs: the client clock the store sends, or monotonic real time
// (the server's TIME runs at real speed; only differences are used, so its offset does not
// matter, and a wall clock step cannot stretch a denial).
func (c *denialCache) now() int64 {
	if c.clock != nil {
		return c.clock.Now().UnixMicro()
	}
	return int64(time.Since(c.base) / time.Microsecond)
}

func (c *denialCache) shard(k denialKey) *denialShard {
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.WriteString(k.key)
	h.WriteString(k.slot)
	return &c.shards[h.Sum64()%denialShards]
}

// cacheable reports whether a's denials write nothing and keep for their RetryAfter
// (algo.DenialCacheable), also when a is wrapped (algo.Named, or any wrapper with Unwrap).
func cacheable(a algo.Algorithm) bool {
	return algo.CapabilitiesOf(a)&algo.DenialCacheable != 0
}

// find returns the live denial of req in it, or the expired one (live false), or nil.
func (it *denialItem) find(req algo.Request) *denial {
	for i := range it.ds {
		if d := &it.ds[i]; d.n == req.N && d.maxWait == req.MaxWait {
			return d
		}
	}
	return nil
}

// applyCached answers req from the cache when it holds a live denial of it, otherwise
// with applyScript (one script), keeping a denial for later.
func (s *Store) applyCached(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	c := s.denials
	k := denialKey{key, a.Slot()}
	sh := c.shard(k)
	for {
		now := c.now()
		sh.mu.RLock()
		if it := sh.m[k]; it != nil && it.a == a {
			if d := it.find(req); d != nil && d.Live(now) {
				out := d.Answer(now)
				sh.mu.RUnlock()
				return out, nil
			}
		}
		sh.mu.RUnlock()

		sh.mu.Lock()
		it := sh.m[k]
		if it != nil && it.a != a {
			it = nil // another config: its denials say nothing about this one
		}
		var d *denial
		if it != nil {
			d = it.find(req)
		}
		if d != nil && d.Live(now) {
			out := d.Answer(now)
			sh.mu.Unlock()
			return out, nil
		}
		if it != nil && it.probing {
			// Another caller is asking Redis about this pair: its answer is likely ours.
			done := it.done
			sh.mu.Unlock()
			select {
			case <-done:
				continue
			case <-ctx.Done():
				return algo.Decision{}, ctx.Err()
			}
		}
		probe := d != nil // an expired denial of this very request: the key is hammered
		if probe {
			it.probing, it.done = true, make(chan struct{})
		}
		epoch := sh.epoch
		sh.mu.Unlock()

		out, err := s.applyScript(ctx, key, a, req)

		sh.mu.Lock()
		if probe {
			it.probing = false
			close(it.done)
			if err == nil && out.Allowed {
				it.stale()
				if it.grants++; it.grants >= 2 {
					it.drop(req) // granted twice in a row: no longer hammered, stop probing
				}
			}
		}
		if err == nil && !out.Allowed && out.RetryAfter > 0 && sh.epoch == epoch {
			c.keep(sh, k, a, req, out, now)
		} else if err == nil && out.Allowed && !probe {
			if it := sh.m[k]; it != nil {
				it.stale() // a grant pushes every denial of the pair later: ask again
			}
		}
		sh.mu.Unlock()
		return out, err
	}
}

// chargeCached sends a charge (never answered from the cache: it must reach Redis, and
// it is never denied) and learns from its answer: a key it left in debt denies a request
// for one permit with no wait until the charge's RetryAfter, so that denial is kept as if
// Redis had answered it when the charge was sent. The denials already kept stay: a charge
// only makes them later.
func (s *Store) chargeCached(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	c := s.denials
	k := denialKey{key, a.Slot()}
	sh := c.shard(k)
	sent := c.now()
	sh.mu.RLock()
	epoch := sh.epoch
	sh.mu.RUnlock()
	out, err := s.applyScript(ctx, key, a, req)
	if err != nil || out.RetryAfter <= 0 {
		return out, err
	}
	denied := algo.Decision{Limit: out.Limit, Remaining: out.Remaining, RetryAfter: out.RetryAfter, ResetAfter: out.ResetAfter}
	sh.mu.Lock()
	if sh.epoch == epoch {
		c.keep(sh, k, a, algo.Request{N: 1}, denied, sent)
	}
	sh.mu.Unlock()
	return out, nil
}

// stale ends the reuse of every denial of the pair, keeping them as markers: the next
// request for each is a probe (one caller asks Redis, the others wait for its answer).
// A grant through this store calls it, since a grant makes the denials' deadlines early.
func (it *denialItem) stale() {
	for i := range it.ds {
		it.ds[i].Until = math.MinInt64
	}
}

// drop forgets it's denial of req.
func (it *denialItem) drop(req algo.Request) {
	for i := range it.ds {
		if it.ds[i].n == req.N && it.ds[i].maxWait == req.MaxWait {
			it.ds = append(it.ds[:i], it.ds[i+1:]...)
			return
		}
	}
}

// keep records the denial out of req, sent at sent; sh is locked. A config that == cannot
// compare is not kept: the cache compares each request's config with the kept one, which
// never panics only because every kept one is comparable (internal/algocmp).
func (c *denialCache) keep(sh *denialShard, k denialKey, a algo.Algorithm, req algo.Request, out algo.Decision, sent int64) {
	d := denial{n: req.N, maxWait: req.MaxWait, Entry: deny.Of(out, sent, c.maxAge)}
	it := sh.m[k]
	if it == nil || it.a != a {
		if !algocmp.Comparable(a) {
			return
		}
		if it == nil && len(sh.m) >= c.perShard {
			c.evict(sh, sent)
		}
		it = &denialItem{a: a}
		sh.m[k] = it
	}
	it.grants = 0
	if old := it.find(req); old != nil {
		*old = d
		return
	}
	if len(it.ds) == maxDenials {
		copy(it.ds, it.ds[1:]) // forget the oldest request
		it.ds = it.ds[:maxDenials-1]
	}
	it.ds = append(it.ds, d)
}

// evict makes room in a full shard: expired pairs go first, else an arbitrary one.
func (c *denialCache) evict(sh *denialShard, now int64) {
	for k, it := range sh.m {
		if it.probing {
			continue
		}
		live := false
		for _, d := range it.ds {
			if d.Live(now) {
				live = true
				break
			}
		}
		if !live {
			delete(sh.m, k)
		}
	}
	if len(sh.m) < c.perShard {
		return
	}
	for k, it := range sh.m {
		if !it.probing {
			delete(sh.m, k)
			return
		}
	}
}

// forget drops every denial of key under slot; Refund and Reset call it before and after
// their call, and the epoch keeps a denial answered before the refund ran from being
// stored after it.
func (c *denialCache) forget(key, slot string) {
	k := denialKey{key, slot}
	sh := c.shard(k)
	sh.mu.Lock()
	sh.epoch++
	if it := sh.m[k]; it != nil {
		delete(sh.m, k)
	}
	sh.mu.Unlock()
}
