package local

import (
	"context"
	"testing"
)

// TestNeverDone checks the context test of ApplyFields' token-bucket path: only a context
// that can never be done skips the check of ctx.Done, and Background is told apart from
// contexts that wrap it.
func TestNeverDone(t *testing.T) {
	t.Parallel()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	live, stop := context.WithCancel(context.Background())
	defer stop()
	type wrapped struct{ context.Context }
	for _, c := range []struct {
		name string
		ctx  context.Context
		want bool
	}{
		{"nil", nil, true},
		{"Background", context.Background(), true},
		{"TODO", context.TODO(), true},
		{"WithValue", context.WithValue(context.Background(), wrapped{}, 1), true},
		{"wrapped Background", wrapped{context.Background()}, true},
		{"cancelled", cancelled, false},
		{"cancellable", live, false},
		{"wrapped cancelled", wrapped{cancelled}, false},
		{"WithoutCancel", context.WithoutCancel(cancelled), true},
	} {
		if got := neverDone(c.ctx); got != c.want {
			t.Errorf("neverDone(%s) = %v, want %v", c.name, got, c.want)
		}
	}
}
