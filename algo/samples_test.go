package algo

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestSamples: every sample validates and has a Lua twin, Samples hands out copies, and
// every algorithm's Lua twin (every .lua file but the shared parts) is run by a sample,
// so an algorithm added without samples is caught here.
func TestSamples(t *testing.T) {
	t.Parallel()
	got := Samples()
	if len(got) == 0 {
		t.Fatal("Samples() is empty")
	}
	got[0] = nil
	if Samples()[0] == nil {
		t.Fatal("Samples() returned its own slice: a caller changed it")
	}
	var sources []string
	for _, a := range Samples() {
		if err := a.Validate(); err != nil {
			t.Errorf("%v: %v", a, err)
		}
		s, ok := a.(Scripted)
		if !ok {
			t.Errorf("%v has no Lua twin", a)
			continue
		}
		// A wrapper's script holds its rule's twin: what it adds is its own.
		src := s.Script().Source
		if in, ok := unwrapAlgorithm(a).(Scripted); ok {
			src = strings.Replace(src, in.Script().Source, "", 1)
		}
		sources = append(sources, src)
	}
	// Not algorithms: the prelude every script runs after, the smooth twins' shared half,
	// the semaphore (a SemaphoreStore's, not an Algorithm).
	shared := map[string]bool{"prelude.lua": true, "smooth.lua": true, "semaphore.lua": true}
	files, err := filepath.Glob("*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Lua files: %v", err)
	}
	for _, f := range files {
		if shared[f] {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// newScript composes whole files: the twin is in its algorithm's source as it is.
		found := false
		for _, s := range sources {
			found = found || strings.Contains(s, string(src))
		}
		if !found {
			t.Errorf("%s is the twin of no sample: list its algorithm's samples with sample(...)", f)
		}
	}
}

// TestLuaSamples runs a random sequence of applies and refunds through every sample's Go
// transition and its Lua twin, on a few keys, and requires identical decisions. The
// per-algorithm differentials (TestLuaDifferential and the others) compare stored states
// and TTLs too, over random families of configs; this one needs nothing but the samples,
// so it covers an algorithm from the moment it lists them.
func TestLuaSamples(t *testing.T) {
	t.Parallel()
	rdb := newRedisClient(t, startRedis(t), 3)
	for i, a := range Samples() {
		t.Run(fmt.Sprintf("%d:%v", i, a), func(t *testing.T) {
			t.Parallel()
			runSampleTwin(t, rdb, a.(Scripted), int64(7000+i), scaled(800))
		})
	}
}

// scaled returns n, or n/4 with -short.
func scaled(n int) int {
	if testing.Short() {
		return max(1, n/4)
	}
	return n
}

func runSampleTwin(t *testing.T, rdb *redis.Client, a Scripted, seed int64, steps int) {
	ctx := context.Background()
	r := rand.New(rand.NewSource(seed))
	q, _ := QuotaOf(a)
	limit, scale := max(q.Limit, 1), micros(q.Window)
	if scale <= 0 {
		scale = 1_000_000
	}
	rs := redis.NewScript(farExpiry(a.Script().Source))
	const nkeys = 3
	states := make([]State, nkeys)
	keys := make([][]string, nkeys)
	ats := make([][]int64, nkeys)
	for k := range states {
		states[k] = a.NewState()
		keys[k] = scriptKeys(a.Script(), fmt.Sprintf("{sample-%d-%d}:%s", seed, k, a.Slot()))
	}
	now := rateShape.start(r, scale)
	for step := 0; step < steps; step++ {
		k := r.Intn(nkeys)
		now += luaTimeStep(r, scale)
		if now > 5e15 {
			now -= 3e15
		}
		if len(ats[k]) > 0 && r.Intn(8) == 0 {
			n, at := 1+r.Int63n(2), ats[k][r.Intn(len(ats[k]))]
			a.Refund(states[k], now, n, at)
			v, err := rs.Run(ctx, rdb, keys[k], refundArgs(a, now, n, at)...).Result()
			if err != nil || ParseRefund(v) != nil {
				t.Fatalf("seed %d step %d: refund(%d, %d) at %d: %v %v", seed, step, n, at, now, v, err)
			}
			continue
		}
		req := luaRandomRequest(r, limit, scale)
		if req.N <= 0 {
			req.N = 1 // stores reject it
		}
		want := a.Apply(states[k], now, req)
		got, err := runDecision(ctx, rdb, rs, keys[k], applyArgs(a, now, req))
		if err != nil || got != want {
			t.Fatalf("seed %d step %d key %d now %d %+v:\n Lua %+v (%v)\n Go  %+v", seed, step, k, now, req, got, err, want)
		}
		if want.Allowed {
			ats[k] = append(ats[k], want.At)
		}
	}
}
