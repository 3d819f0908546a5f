package local_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/local"
)

// TestNewRejects checks that every option value New cannot use is an error at
// construction, wrapping algo.ErrInvalidConfig and naming New, the option and its value.
func TestNewRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		opt  local.Option
		want string
	}{
		{local.WithShards(0), "WithShards(0)"},
		{local.WithShards(-3), "WithShards(-3)"},
		{local.WithShards(1<<16 + 1), "WithShards(65537)"},
		{local.WithMaxKeys(-1), "WithMaxKeys(-1)"},
		{local.WithSweepInterval(-time.Second), "WithSweepInterval(-1s)"},
		{local.WithClock(nil), "WithClock(nil)"},
	} {
		s, err := local.New(local.WithSweepInterval(0), tc.opt)
		if !errors.Is(err, algo.ErrInvalidConfig) || s != nil {
			t.Errorf("%s: New = %v, %v; want nil and an error wrapping ErrInvalidConfig", tc.want, s, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "local.New") || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: error %q does not name local.New and the option", tc.want, msg)
		}
	}
}

// TestNewAccepts checks the values at the edges of each option's range, and that nil
// options are skipped.
func TestNewAccepts(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string][]local.Option{
		"no options":   nil,
		"nil options":  {nil, local.WithSweepInterval(0), nil},
		"one shard":    {local.WithShards(1), local.WithSweepInterval(0)},
		"65536 shards": {local.WithShards(1 << 16), local.WithSweepInterval(0)},
		"no key bound": {local.WithMaxKeys(0), local.WithSweepInterval(0)},
		"no sweeper":   {local.WithSweepInterval(0)},
		"a clock":      {local.WithClock(clockx.NewFake(time.Unix(0, 0))), local.WithSweepInterval(0)},
		"all set":      {local.WithShards(2), local.WithMaxKeys(10), local.WithSweepInterval(time.Hour)},
	} {
		s, err := local.New(opts...)
		if err != nil || s == nil {
			t.Errorf("%s: New = %v, %v; want a store", name, s, err)
			continue
		}
		_ = s.Close()
	}
}
