package distributed_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/internal/teststore"
)

// awkwardKeys are user keys that a naive layout would mix up, split over Cluster slots, or
// mangle: braces in every position, escapes that look like our own, whitespace, unicode,
// NUL bytes, invalid UTF-8 and 10 KB keys that differ only in their last byte.
func awkwardKeys() []string {
	long := strings.Repeat("x", 10*1024)
	return []string{
		"{", "}", "{}", "}{", "{a}", "a}b", "}x", "{user}:1", "user",
		"%", "%7B", "%257B", "%7D",
		"a b", " ", "tab\there", "ключ🔑", "\x00", "nul\x00byte", "\xff\xfe",
		long, long[1:] + "y",
	}
}

// checkKeyIndependence applies a limit of 1 to every awkward key: each must be granted
// once and then denied, so no two keys share state, and every key the state lives in must
// follow the documented layout.
func checkKeyIndependence(ctx context.Context, t *testing.T, c redis.UniversalClient, a algo.Algorithm) {
	t.Helper()
	prefix := freshPrefix()
	s := teststore.Redis(t, c, distributed.WithTimeout(testTimeout), distributed.WithPrefix(prefix), distributed.WithClientClock(fakeClock()))
	for round, wantAllowed := range []bool{true, false} {
		for _, key := range awkwardKeys() {
			d, err := s.Apply(ctx, key, a, algo.Request{N: 1})
			if err != nil {
				t.Fatalf("Apply(%.40q) round %d: %v", key, round, err)
			}
			if d.Allowed != wantAllowed {
				t.Errorf("Apply(%.40q) round %d: Allowed = %v, want %v (keys share state?)", key, round, d.Allowed, wantAllowed)
			}
		}
	}
	for _, key := range awkwardKeys() {
		for _, k := range redisKeys(prefix, key, a) {
			if n, err := c.Exists(ctx, k).Result(); err != nil || n != 1 {
				t.Errorf("user key %.40q: Redis key %.60q does not exist (err %v)", key, k, err)
			}
		}
	}
}

func TestKeysSingleNode(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := ctxTimeout(t, 60*time.Second)
	// The sliding log keeps two keys, the others one: both layouts are covered.
	for _, a := range []algo.Algorithm{
		algo.SlidingWindowLog{Limit: 1, Window: time.Hour},
		algo.TokenBucket{Rate: 1, Burst: 1},
	} {
		// WithoutExpiry: the token bucket's keys live 1 s of real time, which a loaded
		// machine can spend between the rounds (fake clock, real TTLs).
		checkKeyIndependence(ctx, t, redistest.WithoutExpiry(srv.Client(t)), a)
	}
}

func TestKeysCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	c := cl.Client(t)
	ctx := ctxTimeout(t, 60*time.Second)
	a := algo.SlidingWindowLog{Limit: 1, Window: time.Hour}
	// Decisions on awkward keys work on a cluster: a script whose keys sat in different
	// slots would fail with CROSSSLOT.
	checkKeyIndependence(ctx, t, c, a)

	// Both keys of a sliding log sit in the slot of the user key's hash tag.
	for _, key := range awkwardKeys() {
		keys := redisKeys("p:", key, a)
		want := slotOf(ctx, t, c, "{"+strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D").Replace(key)+"}")
		for _, k := range keys {
			if got := slotOf(ctx, t, c, k); got != want {
				t.Errorf("user key %.40q: Redis key %.60q is in slot %d, want %d (the user key's)", key, k, got, want)
			}
		}
	}

	// Different user keys spread over the slots, and so over the masters.
	slots := map[int64]bool{}
	masters := map[int]bool{}
	per := int64(16384 / len(cl.Nodes()))
	for i := 0; i < 64; i++ {
		sl := slotOf(ctx, t, c, redisKeys("p:", "user:"+string(rune('a'+i%26))+strings.Repeat("!", i/26), a)[0])
		slots[sl] = true
		masters[int(min(sl/per, int64(len(cl.Nodes())-1)))] = true
	}
	if len(slots) < 32 || len(masters) != len(cl.Nodes()) {
		t.Errorf("64 user keys fell in %d slots on %d masters; want ≥ 32 slots on all %d",
			len(slots), len(masters), len(cl.Nodes()))
	}
}

// slotOf asks the server for the slot of key (CLUSTER KEYSLOT).
func slotOf(ctx context.Context, t *testing.T, c *redis.ClusterClient, key string) int64 {
	t.Helper()
	sl, err := c.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatalf("CLUSTER KEYSLOT %.40q: %v", key, err)
	}
	return sl
}
