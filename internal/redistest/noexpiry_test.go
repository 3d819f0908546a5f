package redistest_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/internal/redistest"
)

// TestWithoutExpiry checks that a hooked client's scripts cannot set a TTL, whether sent
// as EVALSHA, EVAL (after NOSCRIPT) or in a pipeline, while an unhooked client's can and a
// PEXPIRE sent directly still works.
func TestWithoutExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := redistest.Start(t)
	plain := s.Client(t)
	hooked := redistest.WithoutExpiry(s.Client(t))
	script := redis.NewScript("redis.call('SET', KEYS[1], 'v') redis.call('PEXPIRE', KEYS[1], 60000) return 1")

	// ttl is PTTL key: go-redis reports "no TTL" as -1 (ns) and a missing key as -2.
	ttl := func(key string) time.Duration {
		t.Helper()
		d, err := plain.PTTL(ctx, key).Result()
		if err != nil {
			t.Fatalf("PTTL %s: %v", key, err)
		}
		return d
	}
	for i, key := range []string{"first", "second"} { // first: EVALSHA, NOSCRIPT, EVAL; then EVALSHA of the twin
		if err := script.Run(ctx, hooked, []string{key}).Err(); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if got := ttl(key); got != -1 {
			t.Errorf("hooked run %d: PTTL %s = %v, want -1 (no TTL)", i, key, got)
		}
	}
	pipe := hooked.Pipeline()
	script.Run(ctx, pipe, []string{"piped"})
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("pipeline: %v", err)
	}
	if got := ttl("piped"); got != -1 {
		t.Errorf("hooked pipeline: PTTL piped = %v, want -1", got)
	}
	if err := hooked.PExpire(ctx, "piped", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if got := ttl("piped"); got <= 0 {
		t.Errorf("direct PEXPIRE through the hooked client: PTTL = %v, want > 0", got)
	}

	if err := script.Run(ctx, plain, []string{"plain"}).Err(); err != nil {
		t.Fatal(err)
	}
	if got := ttl("plain"); got <= 0 {
		t.Errorf("unhooked run: PTTL plain = %v, want > 0", got)
	}
}
