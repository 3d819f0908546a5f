package ctxutil_test

import (
	"context"
	"testing"

	"github.com/ratekit/limiter/internal/ctxutil"
)

type key struct{}

func TestCleanup(t *testing.T) {
	t.Parallel()
	live := context.WithValue(context.Background(), key{}, "v")
	if got := ctxutil.Cleanup(live); got != live {
		t.Errorf("Cleanup(live ctx) = %v, want the same ctx", got)
	}
	done, cancel := context.WithCancel(live)
	cancel()
	got := ctxutil.Cleanup(done)
	if err := got.Err(); err != nil {
		t.Errorf("Cleanup(done ctx).Err() = %v, want nil", err)
	}
	if v := got.Value(key{}); v != "v" {
		t.Errorf("Cleanup(done ctx).Value = %v, want the caller's value", v)
	}
	if ctxutil.Cleanup(nil) != nil {
		t.Error("Cleanup(nil) != nil")
	}
}
