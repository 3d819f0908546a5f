package algo

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestPenaltyLibrary: a Penalty over a rule of this package comes as a function library
// too, and FCALL replies and stores what EVALSHA does through offences, blocks, peeks and
// refunds; over a rule without a library it has none.
func TestPenaltyLibrary(t *testing.T) {
	t.Parallel()
	rdb := newRedisClient(t, startRedis(t), 3)
	ctx := context.Background()
	p := Penalty{Rule: FixedWindow{Limit: 2, Window: time.Second}, Block: 300 * time.Millisecond, MaxBlock: 2 * time.Second, Growth: 2}
	def := p.Script()
	if def.Library == "" || def.Function == "" {
		t.Fatalf("%s has no library", def.Name)
	}
	if err := rdb.FunctionLoadReplace(ctx, def.Library).Err(); err != nil {
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
		fr, err2 := rdb.FCall(ctx, def.Function, fk, args...).Result()
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
	if def := custom.Script(); def.Library != "" {
		t.Errorf("a Penalty over a rule without a library got one: %q", def.Function)
	}
}

// nonLibraryRule is a Scripted rule whose script has no library (as a custom algorithm's).
type nonLibraryRule struct{ FixedWindow }

var nonLibraryScript = &Script{Name: "no-library", Source: FixedWindow{}.Script().Source, Keys: []string{""}}

func (nonLibraryRule) Script() *Script { return nonLibraryScript }
