package algo

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestLuaOldBucketKeys: keys written by the previous version hold only tokens/last,
// level/last or tat. They are still read: a grant decides as on the same state written
// now and adds the new fields; a refund of a grant such a key holds gives nothing back
// (its act is not known), until the key's next grant, which rewrites the key in the
// compact format (one packed string).
func TestLuaOldBucketKeys(t *testing.T) {
	t.Parallel()
	rdb := newRedisClient(t, startRedis(t), 3)
	ctx := context.Background()
	const now = 1_700_000_000_000_000
	for _, c := range []struct {
		a     Scripted
		old   []any
		state State // the Go state of the same key
	}{
		{TokenBucket{Rate: 10, Burst: 5}, []any{"tokens", "-1", "last", now},
			&tokenBucketState{tokens: -1, last: now, mark: olderVersion}},
		{LeakyBucket{Rate: 10, Capacity: 5}, []any{"level", "4", "last", now},
			&leakyBucketState{valid: true, level: 4, last: now}},
		{GCRA{Rate: 10, Burst: 5}, []any{"tat", now + 600_000},
			&gcraState{valid: true, tat: now + 600_000}},
	} {
		key := "{old}:" + c.a.Name()
		rs := redis.NewScript(c.a.Script().Source)
		if err := rdb.HSet(ctx, key, c.old...).Err(); err != nil {
			t.Fatal(err)
		}
		before, _ := readState(ctx, rdb, key)
		// The refund of a reservation acting in 100 ms: nothing given back, nothing written.
		if err := rs.Run(ctx, rdb, []string{key}, refundArgs(c.a, now, 1, now+100_000)...).Err(); err != nil {
			t.Fatalf("%v: refund: %v", c.a, err)
		}
		if after, _ := readState(ctx, rdb, key); len(after) != len(before) || rdb.Type(ctx, key).Val() != "hash" {
			t.Errorf("%v: a refund on an old key wrote %v (was %v)", c.a, after, before)
		}
		req := Request{N: 1, MaxWait: time.Second}
		want := c.a.Apply(c.state, now+1000, req)
		v, err := rs.Run(ctx, rdb, []string{key}, applyArgs(c.a, now+1000, req)...).Result()
		if err != nil {
			t.Fatalf("%v: apply: %v", c.a, err)
		}
		if got, err := decisionOf(v); err != nil || got != want {
			t.Errorf("%v: apply on an old key: Lua %v (%+v, %v), Go %+v", c.a, v, got, err, want)
		}
		h, _ := readState(ctx, rdb, key)
		if _, ok := h["act"]; !ok || rdb.Type(ctx, key).Val() != "string" {
			t.Errorf("%v: the grant did not rewrite the key in the compact format with act: %v", c.a, h)
		}
	}
}
