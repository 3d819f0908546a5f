package distributed_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/internal/teststore"
)

// slotted is a custom algorithm: a token bucket under a slot and script keys of its own.
type slotted struct {
	algo.TokenBucket
	slot string
	keys []string
}

func (s slotted) Slot() string { return s.slot }

func (s slotted) Script() *algo.Script {
	def := *s.TokenBucket.Script()
	def.Keys = s.keys
	return &def
}

// TestStateKeysNeverNameAResetMark: a Reset leaves a mark at <state key>!reset that the
// refunds of the state read (admin.go). A custom algorithm whose slot, or slot and script
// key, ends in "!reset" would keep its state in the mark of another rule's state: its
// grants would drop that rule's refunds, and that rule's Resets would overwrite its state.
// The Redis store refuses it on every call, wrapping algo.ErrInvalidConfig; slots that only
// hold the suffix elsewhere are fine.
func TestStateKeysNeverNameAResetMark(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := ctxTimeout(t, 60*time.Second)
	rc := srv.Client(t)
	tb := algo.TokenBucket{Rate: 10, Burst: 5}
	for _, c := range []struct {
		a       slotted
		refused bool
	}{
		{slotted{tb, "tb!reset", []string{""}}, true},             // the mark of "tb"
		{slotted{tb, "tb", []string{"", "!reset"}}, true},         // its second key is its own state's mark
		{slotted{tb, "tb!re", []string{"", "set"}}, true},         // slot and suffix together
		{slotted{tb, "tb", []string{"", "x!reset"}}, true},        // the mark of "tbx"
		{slotted{tb, "tb!reset!", []string{""}}, false},           // the suffix, not at the end
		{slotted{tb, "tb", []string{"", "!rese"}}, false},         // a part of it
		{slotted{tb, "my!reset:tb", []string{"", ":pen"}}, false}, // as algo.Named(tb, "my!reset") makes
	} {
		s := teststore.Redis(t, rc, distributed.WithPrefix(freshPrefix()), distributed.WithTimeout(testTimeout))
		calls := map[string]error{}
		_, calls["Apply"] = s.Apply(ctx, "k", c.a, algo.Request{N: 1})
		_, calls["Peek"] = s.Peek(ctx, "k", c.a, algo.Request{N: 1})
		calls["Refund"] = s.Refund(ctx, "k", c.a, 1, 0)
		_, _, calls["ApplyAll"] = s.ApplyAll(ctx, "k", []algo.Algorithm{c.a, algo.GCRA{Rate: 10, Burst: 5}}, algo.Request{N: 1})
		calls["Reset"] = s.Reset(ctx, "k", c.a)
		for name, err := range calls {
			if got := errors.Is(err, algo.ErrInvalidConfig); got != c.refused {
				t.Errorf("slot %q, keys %q: %s = %v; want refused (algo.ErrInvalidConfig): %v", c.a.slot, c.a.keys, name, err, c.refused)
			} else if !c.refused && err != nil {
				t.Errorf("slot %q, keys %q: %s = %v", c.a.slot, c.a.keys, name, err)
			}
		}
	}
}
