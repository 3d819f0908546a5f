package algo

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/internal/luawire"
)

// TestPenaltyLibrary: a Penalty over a rule of this package follows the composition rule
// (luawire.Composed), so the store loads it as a function library too, and FCALL replies
// and stores what EVALSHA does through offences, blocks, peeks and refunds; over a rule
// that does not follow it (a custom algorithm's) it does not either.
func TestPenaltyLibrary(t *testing.T) {
	t.Parallel()
	rdb := newRedisClient(t, startRedis(t), 3)
	ctx := context.Background()
	p := Penalty{Rule: FixedWindow{Limit: 2, Window: time.Second}, Block: 300 * time.Millisecond, MaxBlock: 2 * time.Second, Growth: 2}
	def := p.Script()
	if !luawire.Composed(def.Source) {
		t.Fatalf("%s does not follow the composition rule", def.Name)
	}
	fn, _, _, lib := luawire.RateLibrary(def.Source, len(def.Keys))
	if err := rdb.FunctionLoadReplace(ctx, lib).Err(); err != nil {
		t.Fatalf("FUNCTION LOAD: %v", err)
	}
	rs := redis.NewScript(def.Source)
	ek, fk := scriptKeys(def, "{pe}"), scriptKeys(def, "{pf}")
	now, at := int64(1_700_000_000_000_000), int64(0)
	for i := range 60 {
		now += 53_000
		args := ApplyArgs(nil, now, Request{N: 1}, p.AppendArgs(nil))
		switch {
		case i%7 == 3:
			args = PeekArgs(nil, now, Request{N: 1}, p.AppendArgs(nil))
		case i%11 == 5 && at != 0:
			args = RefundArgs(nil, now, 1, at, p.AppendArgs(nil))
		}
		er, err1 := rs.Run(ctx, rdb, ek, args...).Result()
		fr, err2 := rdb.FCall(ctx, fn, fk, args...).Result()
		if err1 != nil || err2 != nil || !reflect.DeepEqual(er, fr) {
			t.Fatalf("step %d (%v): EVALSHA %v, %v; FCALL %v, %v", i, args[0], er, err1, fr, err2)
		}
		if d, err := ParseDecision(er); err == nil && d.Allowed {
			at = d.At
		}
		for k := range ek {
			ev, _ := rdb.Get(ctx, ek[k]).Result() // every key holds a packed string
			fv, _ := rdb.Get(ctx, fk[k]).Result()
			if !reflect.DeepEqual(ev, fv) {
				t.Fatalf("step %d: key %d holds %v after EVALSHA, %v after FCALL", i, k, ev, fv)
			}
		}
	}
	custom := Penalty{Rule: nonLibraryRule{FixedWindow{Limit: 1, Window: time.Second}}, Block: time.Second}
	if def := custom.Script(); luawire.Composed(def.Source) {
		t.Error("a Penalty over a rule that does not follow the composition rule follows it")
	}
	// ... and answers as it did, as a plain script with a plain now.
	rs = redis.NewScript(custom.Script().Source)
	args := ApplyArgs(nil, 1_700_000_000_000_000, Request{N: 1}, custom.AppendArgs(nil))
	if r, err := rs.Run(ctx, rdb, scriptKeys(custom.Script(), "{pc}"), args...).Result(); err != nil {
		t.Fatal(err)
	} else if d, err := ParseDecision(r); err != nil || !d.Allowed {
		t.Errorf("custom penalty: %+v, %v", d, err)
	}
}

// nonLibraryRule is a Scripted rule whose script does not follow the composition rule (as
// a custom algorithm's): a comment before the base.
type nonLibraryRule struct{ FixedWindow }

var nonLibraryScript = &Script{Name: "no-library", Source: "-- custom\n" + FixedWindow{}.Script().Source, Keys: []string{""}}

func (nonLibraryRule) Script() *Script { return nonLibraryScript }
