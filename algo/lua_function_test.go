package algo

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/internal/luawire"
)

// twinScript runs a twin under farExpiry the way a store does: EVALSHA of its Source, or
// FCALL of the function its Library registers.
type twinScript struct {
	rs *redis.Script // nil for a function
	fn string
}

func (s *twinScript) run(ctx context.Context, p redis.Pipeliner, keys []string, args []any) *redis.Cmd {
	if s.rs == nil {
		return p.FCall(ctx, s.fn, keys, args...)
	}
	return s.rs.EvalSha(ctx, p, keys, args...)
}

// farLibShadow is farShadow for a function library, which loads without setmetatable and
// with a redis table that lacks call: a plain table whose functions look the global redis
// up when they run, keeping register_function for the load and error_reply for the twins.
const farLibShadow = "local redis = {call = function(cmd, ...) " +
	"if cmd == 'PEXPIRE' then local k, ms = ...; return redis.call(cmd, k, tonumber(ms) + 1000000000) end " +
	"if cmd == 'SET' then local a = {...}; if a[3] == 'PX' then a[4] = tonumber(a[4]) + 1000000000 end return redis.call(cmd, unpack(a)) end " +
	"return redis.call(cmd, ...) end, pcall = function(...) return redis.pcall(...) end, error_reply = function(...) return redis.error_reply(...) end, " +
	"register_function = redis.register_function}\n"

// loadTwin loads def on rdb, with farExpiry's TTLs, as a script or as a function library.
func loadTwin(ctx context.Context, t *testing.T, rdb *redis.Client, def *Script, functions bool) *twinScript {
	t.Helper()
	if !functions {
		rs := redis.NewScript(farExpiry(def.Source))
		if err := rs.Load(ctx, rdb).Err(); err != nil {
			t.Fatal(err)
		}
		return &twinScript{rs: rs}
	}
	fn, _, _, lib := luawire.RateLibrary(farLibShadow+def.Source, len(def.Keys))
	if err := rdb.FunctionLoadReplace(ctx, lib).Err(); err != nil {
		t.Fatalf("%s: FUNCTION LOAD: %v", def.Name, err)
	}
	return &twinScript{fn: fn}
}

// TestLuaDifferentialFunctions is TestLuaDifferential with every twin run as its Redis 7
// function (FCALL): the library must decide, store and expire exactly as the script.
func TestLuaDifferentialFunctions(t *testing.T) {
	t.Parallel()
	rdb := newRedisClient(t, startRedis(t), 3)
	const seqs, steps = 6, 1000
	for i, tw := range luaTwins {
		tw.functions = true
		t.Run(tw.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			var st diffStats
			for seq := 0; seq < seqs; seq++ {
				runDifferential(t, rdb, tw, int64(7000*(i+1)+seq), steps, &st)
			}
			t.Logf("%s: %d steps compared in %v: %+v", tw.name, st.steps, time.Since(start).Round(time.Millisecond), st)
		})
	}
}

// TestScriptLibraries: every rate twin follows the module's composition rule
// (luawire.Composed), so the Redis store loads it as a library (luawire.RateLibrary, as
// distributed's newEntry builds it) whose function's name carries the SHA-1 of Source, and
// FCALL replies what EVALSHA replies (also in peek mode, which writes nothing, and with the
// server's TIME).
func TestScriptLibraries(t *testing.T) {
	t.Parallel()
	rdb := newRedisClient(t, startRedis(t), 3)
	ctx := context.Background()
	seen := map[string]bool{}
	// Slow rates and long windows: a key written by the first call must not expire in real
	// time before the second call's key is counted, however loaded the machine (a window
	// of a second ended between the two calls beside CPU burners).
	for _, a := range []Scripted{TokenBucket{Rate: 0.01, Burst: 5}, GCRA{Rate: 0.01, Burst: 5}, LeakyBucket{Rate: 0.01, Capacity: 5},
		FixedWindow{Limit: 5, Window: time.Hour}, SlidingWindowCounter{Limit: 5, Window: time.Hour},
		SlidingWindowLog{Limit: 5, Window: time.Hour}} {
		def := a.Script()
		if !luawire.Composed(def.Source) {
			t.Fatalf("%s: the script does not follow the composition rule", a.Name())
		}
		fn, _, _, lib := luawire.RateLibrary(def.Source, len(def.Keys))
		if !strings.HasPrefix(fn, "ratekit_") || seen[fn] || !strings.HasPrefix(lib, "#!lua name="+fn+"\n") {
			t.Fatalf("%s: function %q, library %.40q", a.Name(), fn, lib)
		}
		seen[fn] = true
		if err := rdb.FunctionLoadReplace(ctx, lib).Err(); err != nil {
			t.Fatalf("%s: FUNCTION LOAD: %v", a.Name(), err)
		}
		rs := redis.NewScript(def.Source)
		for i, args := range [][]any{
			ApplyArgs(nil, ServerTime, Request{N: 1}, a.AppendArgs(nil)),
			PeekArgs(nil, ServerTime, Request{N: 2}, a.AppendArgs(nil)),
			ApplyArgs(nil, ServerTime, Request{N: 9}, a.AppendArgs(nil)),
		} {
			ev, fc := fmt.Sprintf("{e}:%s:%d", a.Name(), i), fmt.Sprintf("{f}:%s:%d", a.Name(), i)
			er, err1 := rs.Run(ctx, rdb, scriptKeys(def, ev), args...).Result()
			fr, err2 := rdb.FCall(ctx, fn, scriptKeys(def, fc), args...).Result()
			if err1 != nil || err2 != nil {
				t.Fatalf("%s %v: EVALSHA %v, FCALL %v", a.Name(), args[0], err1, err2)
			}
			e, _ := ParseDecision(er)
			f, _ := ParseDecision(fr)
			// Same server TIME to within the calls' spacing: compare what does not move.
			if e.Allowed != f.Allowed || e.Limit != f.Limit || e.Remaining != f.Remaining {
				t.Errorf("%s %v: EVALSHA %+v, FCALL %+v", a.Name(), args[0], e, f)
			}
			en, _ := rdb.Exists(ctx, scriptKeys(def, ev)...).Result()
			fn, _ := rdb.Exists(ctx, scriptKeys(def, fc)...).Result()
			if en != fn || (args[0] == "peek" && fn != 0) {
				t.Errorf("%s %v: %d keys after EVALSHA, %d after FCALL", a.Name(), args[0], en, fn)
			}
		}
	}
	if luawire.Composed("return 1") {
		t.Error("a script without the base follows the composition rule")
	}
	// The semaphore's script follows the rule too (the base's helpers load once), and its
	// library's function answers as the script does.
	sem := Semaphore{Permits: 1, LeaseTTL: time.Second}
	def := sem.Script()
	fn, lib := luawire.Library(def.Source)
	if !luawire.Composed(def.Source) || seen[fn] {
		t.Fatalf("semaphore: composed %v, function %q", luawire.Composed(def.Source), fn)
	}
	if err := rdb.FunctionLoadReplace(ctx, lib).Err(); err != nil {
		t.Fatalf("semaphore: FUNCTION LOAD: %v", err)
	}
	for _, op := range []string{"acquire", "holders"} {
		args := sem.AppendArgs([]any{op, "", "tok", 0})
		er, err1 := redis.NewScript(def.Source).Run(ctx, rdb, scriptKeys(def, "{se}"), args...).Result()
		fr, err2 := rdb.FCall(ctx, fn, scriptKeys(def, "{sf}"), args...).Result()
		if err1 != nil || err2 != nil || !reflect.DeepEqual(er, fr) {
			t.Errorf("semaphore %s: EVALSHA %v, %v; FCALL %v, %v", op, er, err1, fr, err2)
		}
	}
}
