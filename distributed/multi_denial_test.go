package distributed_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/multirules"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/internal/teststore"
)

// dumpKeys returns the DUMP payload and the PTTL of every key under prefix.
func dumpKeys(t *testing.T, c redis.Cmdable, prefix string) map[string][2]any {
	t.Helper()
	ctx := ctxTimeout(t, 10*time.Second)
	keys, err := c.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][2]any{}
	for _, k := range keys {
		d, err := c.Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		ttl, err := c.PTTL(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		out[k] = [2]any{d, ttl}
	}
	return out
}

// TestApplyAllDenialTouchesNothing checks, byte for byte with DUMP, that a denied composite
// leaves every key as it was, for every rule set, and that a key the denied call would
// have created does not exist afterwards. The client has PEXPIRE disabled (the short TTLs
// of these rules would expire in real time while the fake clock stands still); the TTLs
// are checked by TestApplyAllDenialKeepsTTLs.
func TestApplyAllDenialTouchesNothing(t *testing.T) {
	t.Parallel()
	c := redistest.WithoutExpiry(redistest.Start(t).Client(t))
	for name, rules := range multirules.Sets() {
		checkDenialTouchesNothing(t, c, name, rules)
	}
}

// TestApplyAllDenialKeepsTTLs: rules whose TTLs last minutes, on a client with real TTLs.
// A denied composite restores every key with the TTL it had.
func TestApplyAllDenialKeepsTTLs(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t).Client(t)
	checkDenialTouchesNothing(t, c, "long TTLs", []algo.Algorithm{
		algo.SlidingWindowLog{Limit: 9, Window: time.Hour},
		algo.TokenBucket{Rate: 0.01, Burst: 6},
		algo.FixedWindow{Limit: 4, Window: time.Hour},
	})
}

// checkDenialTouchesNothing calls the composite at one instant until it denies, then
// compares every key (DUMP payload and PTTL) before and after the denied call.
func checkDenialTouchesNothing(t *testing.T, c redis.UniversalClient, name string, rules []algo.Algorithm) {
	t.Helper()
	ctx := ctxTimeout(t, time.Minute)
	prefix := freshPrefix()
	s := teststore.Redis(t, c, distributed.WithTimeout(testTimeout), distributed.WithPrefix(prefix), distributed.WithClientClock(fakeClock()))
	denied := false
	for i := 0; i < 40 && !denied; i++ {
		before := dumpKeys(t, c, prefix)
		ds, ok, err := s.ApplyAll(ctx, "k", rules, algo.Request{N: 1})
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			continue
		}
		after := dumpKeys(t, c, prefix)
		if len(before) == 0 {
			t.Errorf("%s: no keys before the denial; the test needs grants to roll back", name)
		}
		for k, b := range before {
			a, found := after[k]
			switch {
			case !found:
				t.Errorf("%s: key %s vanished", name, k)
			case a[0] != b[0]:
				t.Errorf("%s: key %s changed: %q → %q", name, k, b[0], a[0])
			case a[1].(time.Duration) > b[1].(time.Duration) || a[1].(time.Duration) < b[1].(time.Duration)-time.Second:
				t.Errorf("%s: key %s TTL %v → %v", name, k, b[1], a[1])
			}
		}
		for k := range after {
			if _, found := before[k]; !found {
				t.Errorf("%s: denied call created key %s", name, k)
			}
		}
		if t.Failed() {
			t.Fatalf("%s: decisions %+v", name, ds)
		}
		denied = true
	}
	if !denied {
		t.Errorf("%s: 40 calls at one instant were all granted; the test needs a denial", name)
	}
	// A request larger than every limit on a fresh key: denied, and no key is created.
	ds, ok, err := s.ApplyAll(ctx, "fresh", rules, algo.Request{N: 1000})
	if err != nil || ok {
		t.Fatalf("%s: N=1000 → %v %+v %v, want a denial", name, ok, ds, err)
	}
	if n, err := c.Exists(ctx, keysOf(t, c, prefix+"{fresh}*")...).Result(); err != nil || n != 0 {
		t.Errorf("%s: denied call on a fresh key left %d keys (%v)", name, n, err)
	}
}

func keysOf(t *testing.T, c redis.Cmdable, pattern string) []string {
	t.Helper()
	keys, err := c.Keys(ctxTimeout(t, 10*time.Second), pattern).Result()
	if err != nil {
		t.Fatal(err)
	}
	return append(keys, "nonexistent-placeholder") // EXISTS needs a key
}
