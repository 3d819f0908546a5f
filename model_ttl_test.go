package limiter_test

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/redis/go-redis/v9"
)

// modelTTL emulates, on the fake clock, the TTLs that redistest.WithoutExpiry removes from
// the Redis world's scripts, where leaving a key in place is not transparent: after a
// config change. The rule both stores document is that a state expires at the instant it
// would be fresh again, computed at its last write under the config of that write (Redis:
// the PEXPIRE of that write); from then on the key starts fresh under the current config.
// A state kept past that instant under the same config decides like a fresh one (what
// WithoutExpiry relies on) and is left alone, as the local store keeps it; under another
// config it may not (a lower rate drains it slower), so it is deleted here as its TTL
// would have deleted it. The smooth limiters are left alone: their state records its config
// and rescales itself across a change, as Guava's setRate does, and their keys linger a
// minute past ResetAfter (the local store keeps them too).
//
// The instants are exact µs, the local store's. A real TTL is rounded up to whole ms, at
// least 2 ms, and so keeps a state up to 2 ms longer: that only ever decides as strictly as
// a fresh state or more, never admits more.
type modelTTL struct {
	c      redis.UniversalClient
	prefix string
	clk    *clockx.Fake
	keys   map[string]*modelTTLKey
}

// modelTTLKey is the expiry of one tracked key: the instant of its last write's TTL and the
// config of that write.
type modelTTLKey struct {
	fresh int64
	cfg   algo.Algorithm
}

func newModelTTL(c redis.UniversalClient, prefix string, clk *clockx.Fake) *modelTTL {
	return &modelTTL{c: c, prefix: prefix, clk: clk, keys: map[string]*modelTTLKey{}}
}

func (t *modelTTL) now() int64 { return t.clk.Now().UnixMicro() }

// redisKeys returns the Redis keys holding key's state, under any slot.
func (t *modelTTL) redisKeys(ctx context.Context, key string) ([]string, error) {
	ks, err := t.c.Keys(ctx, t.prefix+"{"+key+"}:*").Result()
	slices.Sort(ks)
	return ks, err
}

// expire deletes key's state before a call under a when its TTL has run out and a is not
// the config of its last write.
func (t *modelTTL) expire(ctx context.Context, key string, a algo.Algorithm) error {
	k := t.keys[key]
	if k == nil || k.fresh > t.now() || reflect.DeepEqual(k.cfg, a) || strings.HasPrefix(a.Name(), "smooth-") {
		return nil
	}
	delete(t.keys, key)
	ks, err := t.redisKeys(ctx, key)
	if err == nil && len(ks) > 0 {
		err = t.c.Del(ctx, ks...).Err()
	}
	return err
}

// granted records a grant's write: its TTL is its ResetAfter.
func (t *modelTTL) granted(key string, a algo.Algorithm, d algo.Decision) {
	t.keys[key] = &modelTTLKey{fresh: t.now() + int64(d.ResetAfter/time.Microsecond), cfg: a}
}

// snapshot is key's raw state, to tell whether a refund wrote it.
func (t *modelTTL) snapshot(ctx context.Context, key string) (string, error) {
	ks, err := t.redisKeys(ctx, key)
	if err != nil {
		return "", err
	}
	s := ""
	for _, k := range ks {
		v, err := t.c.Dump(ctx, k).Result()
		if err != nil && err != redis.Nil {
			return "", err
		}
		s += fmt.Sprintf("%s=%q;", k, v)
	}
	return s, nil
}

// refunded records a refund that wrote key's state: the script set its TTL to when that
// state is fresh, which a request that can never be granted reports (writing nothing).
func (t *modelTTL) refunded(ctx context.Context, apply func(algo.Request) (algo.Decision, error), key string, a algo.Algorithm) error {
	d, err := apply(algo.Request{N: math.MaxInt64})
	if err != nil {
		return err
	}
	t.granted(key, a, d)
	return nil
}
