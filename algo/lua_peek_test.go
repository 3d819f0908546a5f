package algo

import (
	"context"
	"fmt"
	"math/rand"
	"regexp"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// peekTwin peeks at key (its script keys) under a at now in Go (Peek on st) and in Lua (a
// "peek" through rs), and describes the first difference, or returns "": the replies must
// be equal, and the script must leave the keys as they were (same TTLs, same stored
// state, Go's st untouched). runTwinSeq calls it between its steps, where every key is
// persisted (PTTL -1) or absent (-2), so a peek that set a TTL or created a key shows.
// The request is mostly a single permit (what limiter's Peek asks), else a random one.
func peekTwin(ctx context.Context, rdb *redis.Client, rs *twinScript, tw luaTwin, a Scripted, st State,
	keys []string, now int64, r *rand.Rand, scale int64) string {
	req := Request{N: 1}
	if r.Intn(3) == 0 {
		req = rateShape.request(r, tw.limit(a), scale)
		if req.N <= 0 {
			req.N = 1
		}
	}
	before := tw.snap(st)
	want, ok := Peek(a, st, now, req)
	if !ok {
		return "Peek: the state cannot be copied"
	}
	if after := tw.snap(st); after != before {
		return fmt.Sprintf("Go Peek changed the state: %+v -> %+v", before, after)
	}
	var run *redis.Cmd
	var pttl [2][]*redis.DurationCmd
	var dumps [2][]*redis.StringCmd
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i := range 2 {
			if i == 1 {
				run = rs.run(ctx, p, keys, PeekArgs(nil, now, req, a.AppendArgs(nil)))
			}
			for _, k := range keys {
				pttl[i] = append(pttl[i], p.PTTL(ctx, k))
				dumps[i] = append(dumps[i], p.Dump(ctx, k))
			}
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return fmt.Sprintf("redis: %v", err)
	}
	v, err := run.Result()
	if err != nil {
		return fmt.Sprintf("script: %v", err)
	}
	if got, err := decisionOf(v); err != nil || got != want {
		return fmt.Sprintf("%+v: Lua reply %v: %+v (%v)\n   Go decision %+v", req, v, got, err, want)
	}
	for i, k := range keys {
		b, a := pttl[0][i].Val(), pttl[1][i].Val()
		if b != a || b >= 0 {
			return fmt.Sprintf("%s: PTTL %v before the peek, %v after; want -1 (persisted) or -2 (no key) both times", k, b, a)
		}
		if db, da := dumps[0][i].Val(), dumps[1][i].Val(); db != da {
			return fmt.Sprintf("%s: the peek changed the stored value", k)
		}
	}
	return ""
}

// TestPeekModeKnowsEveryCommand checks that every command the rate twins call is one the
// prelude's peek mode knows, as a read it runs or a write it skips: an unknown one raises
// an error in peek mode only, which a twin reaching it rarely might hide from the
// differential test.
func TestPeekModeKnowsEveryCommand(t *testing.T) {
	t.Parallel()
	known := map[string]bool{}
	for _, list := range regexp.MustCompile(`local (?:reads|writes) = \{([^}]*)\}`).FindAllStringSubmatch(preludeLua, -1) {
		for _, m := range regexp.MustCompile(`([A-Z]+) = true`).FindAllStringSubmatch(list[1], -1) {
			known[m[1]] = true
		}
	}
	if len(known) < 10 {
		t.Fatalf("found only %d commands in the prelude's peek lists: %v", len(known), known)
	}
	call := regexp.MustCompile(`redis\.call\('([A-Za-z]+)'`)
	for _, a := range []Scripted{FixedWindow{}, SlidingWindowLog{}, SlidingWindowCounter{}, TokenBucket{},
		LeakyBucket{}, GCRA{}, SmoothBursty{}, SmoothWarmingUp{}} {
		for _, m := range call.FindAllStringSubmatch(a.Script().Source, -1) {
			if !known[strings.ToUpper(m[1])] {
				t.Errorf("%s calls %s, which the prelude's peek mode does not know", a.Name(), m[1])
			}
		}
	}
}
