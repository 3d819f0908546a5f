package limiter_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/leasing"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
	"github.com/redis/go-redis/v9"
)

// comboAgree is what a variant's answers must share with the reference's.
type comboAgree uint8

const (
	agreeNone    comboAgree = iota // only the bound: a trade (leasing) or a fault lets them differ
	agreeFull                      // every decision, field by field: local and Redis decide alike
	agreeGranted                   // whether each request is granted (the denial cache's RetryAfter counts down)
)

// comboVariant is one store stack of a combo.
type comboVariant struct {
	name  string
	redis bool // needs a Redis server
	seeds int  // default seeds; 0: the combo's
	agree comboAgree
	// stores makes one store per process on w's clock; it may add closers to w.closes.
	stores func(env *comboEnv, p *comboPlan, w *comboWorld, prefix string) ([]store.Store, error)
	// slack is the trade the variant documents on rule a's bound (leasing); nil: none.
	slack func(p *comboPlan, a algo.Algorithm) int64
	// setup runs once the world is built (faults, a key of the wrong type).
	setup func(env *comboEnv, w *comboWorld, prefix string) error
	// observe: every limiter has an Observer and a timeout, which take its decisions off
	// the fast path (see observed).
	observe bool
}

// comboEnv holds the Redis servers and clients of one subtest, made when first needed.
type comboEnv struct {
	tb  testing.TB
	srv *redistest.Server // nil: no Redis

	mu        sync.Mutex
	clients   []redis.UniversalClient // WithoutExpiry, one per process
	proxy     *redistest.Proxy
	proxied   redis.UniversalClient
	ttlClient redis.UniversalClient
	onCluster *comboEnv // clustered's
}

// clusterProcs is how many processes a clustered variant may have.
const clusterProcs = 3

// clustered returns the env whose processes' clients talk to a Redis Cluster of three
// masters (started on first use) instead of the single server.
func (e *comboEnv) clustered() *comboEnv {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.onCluster == nil {
		cl := redistest.StartCluster(e.tb, 3)
		ce := &comboEnv{tb: e.tb, srv: e.srv}
		for range clusterProcs {
			ce.clients = append(ce.clients, redistest.WithoutExpiry(cl.Client(e.tb)))
		}
		e.onCluster = ce
	}
	return e.onCluster
}

// clustered is v with its processes on a Redis Cluster (comboEnv.clustered): the keys of
// a plan, and a composite's rules, spread over its masters.
func clustered(v comboVariant, name string) comboVariant {
	inner := v.stores
	v.name = name
	v.stores = func(env *comboEnv, p *comboPlan, w *comboWorld, prefix string) ([]store.Store, error) {
		return inner(env.clustered(), p, w, prefix)
	}
	return v
}

// observed returns v with every limiter observed (WithObserver) and bounded by a timeout
// (WithTimeout, far longer than any step): both take a decision off the limiter's fast
// path and the local store's, through the general ones, which must answer the same; and
// every AllowN, Reserve and TryAcquire must reach the observer.
func observed(v comboVariant, name string) comboVariant {
	v.name, v.observe = name, true
	return v
}

// countObserver counts the decisions it is told of.
type countObserver struct{ n atomic.Int64 }

func (c *countObserver) Decided(context.Context, limiter.Event)                    { c.n.Add(1) }
func (c *countObserver) BreakerChanged(limiter.BreakerState, limiter.BreakerState) {}

// client returns process i's client (each process its own connections).
func (e *comboEnv) client(i int) redis.UniversalClient {
	e.mu.Lock()
	defer e.mu.Unlock()
	for len(e.clients) <= i {
		e.clients = append(e.clients, redistest.WithoutExpiry(e.srv.Client(e.tb)))
	}
	return e.clients[i]
}

func newComboLocal(clk clockx.Clock) store.Store {
	s, err := local.New(local.WithClock(clk), local.WithSweepInterval(0))
	if err != nil {
		panic(err) // valid options: a failure is a bug in local.New
	}
	return s
}

// redisStore is one process's Redis store on w's clock. A generous timeout: a loaded
// machine must not turn a slow round trip into a failure.
func redisStore(c redis.UniversalClient, w *comboWorld, prefix string, opts ...distributed.Option) (store.Store, error) {
	return distributed.New(c, append([]distributed.Option{distributed.WithClientClock(w.clk),
		distributed.WithPrefix(prefix), distributed.WithTimeout(30 * time.Second)}, opts...)...)
}

// sharedLocal is one local store several leasing processes take slices from: a process's
// Close gives back its leases and leaves the store to the others.
type sharedLocal struct{ *local.Store }

func (sharedLocal) Close() error { return nil }

// leaseSlice is the plan's slice.
func leaseSlice(p *comboPlan) int64 { return []int64{2, 3, 5, 10, 1}[int(p.v)%5] }

// leaseSlack is the documented leasing trade for procs processes (docs/distributed.md,
// "Quota leasing"): permits used in any span exceed what the algorithm admits by at most
// procs × slice, except that a fixed window's lease ends with its window, so none is
// exceeded; a Reset drops only its own process's leases, and the others' keep granting
// until they end, (procs − 1) × slice on top.
func leaseSlack(procs int) func(p *comboPlan, a algo.Algorithm) int64 {
	return func(p *comboPlan, a algo.Algorithm) int64 {
		s := leaseSlice(p)
		var extra int64
		if p.resets && procs > 1 {
			extra = int64(procs-1) * s
		}
		if _, ok := a.(algo.FixedWindow); ok {
			return extra
		}
		return int64(procs)*s + extra
	}
}

// plainVariant: procs Redis stores (or one local store) with opts, no wrapper.
func plainVariant(name string, redisToo bool, procs int, agree comboAgree, opts ...distributed.Option) comboVariant {
	return comboVariant{name: name, redis: redisToo, agree: agree,
		stores: func(env *comboEnv, p *comboPlan, w *comboWorld, prefix string) ([]store.Store, error) {
			if !redisToo {
				return []store.Store{newComboLocal(w.clk)}, nil
			}
			var out []store.Store
			for i := range procs {
				s, err := redisStore(env.client(i), w, prefix, opts...)
				if err != nil {
					return out, err
				}
				out = append(out, s)
			}
			return out, nil
		}}
}

// leasingVariant: procs processes, each a leasing store of the plan's slice over its own
// Redis store (with opts) or over one shared local store.
func leasingVariant(name string, redisToo bool, procs int, lopts []leasing.Option, opts ...distributed.Option) comboVariant {
	return comboVariant{name: name, redis: redisToo, agree: agreeNone, slack: leaseSlack(procs),
		stores: func(env *comboEnv, p *comboPlan, w *comboWorld, prefix string) ([]store.Store, error) {
			var shared *local.Store
			if !redisToo {
				shared = newComboLocal(w.clk).(*local.Store)
				w.closes = append(w.closes, shared.Close)
			}
			var out []store.Store
			for i := range procs {
				inner := store.Store(sharedLocal{shared})
				if redisToo {
					var err error
					if inner, err = redisStore(env.client(i), w, prefix, opts...); err != nil {
						return out, err
					}
				}
				s, err := leasing.New(inner, leaseSlice(p), lopts...)
				if err != nil {
					return out, err
				}
				out = append(out, s)
			}
			return out, nil
		}}
}

// wrongTypeVariant: one Redis store where the key "bad" of the rule holds a string, so every
// call on it fails with WRONGTYPE; the others must keep deciding as the reference does.
func wrongTypeVariant() comboVariant {
	v := plainVariant("redis", true, 1, agreeFull)
	v.setup = func(env *comboEnv, w *comboWorld, prefix string) error {
		w.bad = "bad"
		return env.client(0).Set(context.Background(), prefix+"{bad}:"+w.rules.a.Slot(), "not a hash", 0).Err()
	}
	return v
}

// faultVariant: one Redis store behind a proxy that cFault switches between forwarding,
// refusing and hanging. A short store timeout keeps hung calls cheap; a loaded machine may
// also time out a healthy call, which only denies more: only the bound is checked. opts
// are the store's further options.
func faultVariant(name string, opts ...distributed.Option) comboVariant {
	return comboVariant{name: name, redis: true, agree: agreeNone,
		stores: func(env *comboEnv, p *comboPlan, w *comboWorld, prefix string) ([]store.Store, error) {
			proxy, c := env.faulty()
			proxy.Set(redistest.Forward)
			w.closes = append(w.closes, func() error { proxy.Set(redistest.Forward); return nil })
			w.fault = func(b byte) error {
				proxy.Set([]redistest.ProxyMode{redistest.Forward, redistest.Forward, redistest.Refuse, redistest.Blackhole}[b%4])
				return nil
			}
			s, err := distributed.New(c, append([]distributed.Option{distributed.WithClientClock(w.clk),
				distributed.WithPrefix(prefix), distributed.WithTimeout(100 * time.Millisecond)}, opts...)...)
			return []store.Store{s}, err
		}}
}

// leased is v with each of its stores wrapped in a leasing store of the plan's slice, and
// the leasing trade on the bound: the feature v tests, under a lease.
func leased(v comboVariant, name string) comboVariant {
	inner := v.stores
	v.name, v.agree, v.slack = name, agreeNone, leaseSlack(1)
	v.stores = func(env *comboEnv, p *comboPlan, w *comboWorld, prefix string) ([]store.Store, error) {
		ss, err := inner(env, p, w, prefix)
		if err != nil {
			return ss, err
		}
		for i, s := range ss {
			if ss[i], err = leasing.New(s, leaseSlice(p)); err != nil {
				return ss, err
			}
		}
		return ss, nil
	}
	return v
}

// clientClockVariant: one Redis store with WithClientClock whose TTLs are kept on an
// emulated server clock (model_combo_ttl_test.go), which runs ahead of the client's by the
// cLag steps.
func clientClockVariant() comboVariant {
	return comboVariant{name: "redis", redis: true, agree: agreeNone,
		stores: func(env *comboEnv, p *comboPlan, w *comboWorld, prefix string) ([]store.Store, error) {
			c := env.ttlRedis()
			w.ttl = &comboTTL{c: c, prefix: prefix, dead: map[string]int64{}}
			s, err := redisStore(c, w, prefix)
			return []store.Store{s}, err
		}}
}

// Keys of the combos: three for most; twelve for eviction (leasing.WithMaxKeys(32) keeps
// one lease per shard of its 32: twelve keys put two in one shard nine times in ten, and
// those two then evict each other's lease at every turn); "user|endpoint" for the
// composite, where a user may be named like an endpoint.
var (
	comboKeys          = []string{"a", "b", "c"}
	comboEvictKeys     = []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9", "k10", "k11"}
	comboCompositeKeys = []string{"/upload|/upload", "alice|/upload", "/upload|/home", "alice|/home", "alice|alice"}
	// Dense steps, so that a window sees many grants: leases are evicted and reset while
	// they hold permits.
	comboEvictKinds = []comboKind{cAllow, cAllow, cAllow, cAllow, cAllow, cAllow, cAllow, cAllow, cAllow, cAllow,
		cAllow, cAllow, cRefund, cForward, cReset, cPeek}
	comboLagKinds = []comboKind{cAllow, cAllow, cAllow, cAllow, cAllow, cAllow, cAllow, cAllow, cReserve,
		cRefund, cForward, cForward, cLag, cLag, cPeek}
	comboResetKinds = []comboKind{cAllow, cAllow, cAllow, cAllow, cAllow, cAllow, cAllow, cRefund, cRefund,
		cReset, cReset, cReset, cForward, cPeek}
)

// faulty returns the subtest's proxy and a client that dials through it.
func (e *comboEnv) faulty() (*redistest.Proxy, redis.UniversalClient) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.proxy == nil {
		e.proxy = redistest.NewProxy(e.tb, e.srv.Addr())
		c := redis.NewClient(&redis.Options{Addr: e.proxy.Addr(), ContextTimeoutEnabled: true})
		e.tb.Cleanup(func() { _ = c.Close() })
		e.proxied = redistest.WithoutExpiry(c)
	}
	return e.proxy, e.proxied
}

// prepare makes every server and client at once: FuzzModel's inputs may not call the
// methods of its *testing.F that making them needs.
func (e *comboEnv) prepare() {
	for i := range 3 {
		e.client(i)
	}
	e.faulty()
	e.ttlRedis()
	e.clustered()
}
