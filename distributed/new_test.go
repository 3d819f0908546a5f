package distributed_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/distributed"
)

// TestNewRejects needs no server: every client and option value New cannot use is an
// error at construction, wrapping algo.ErrInvalidConfig and naming New and the cause.
func TestNewRejects(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = c.Close() })
	var typedNil *redis.Client
	var typedNilCluster *redis.ClusterClient
	for _, tc := range []struct {
		client redis.UniversalClient
		opt    distributed.Option
		want   string
	}{
		{nil, nil, "client is nil"},
		{typedNil, nil, "client is nil"},
		{typedNilCluster, nil, "client is nil"},
		{c, distributed.WithTimeout(-time.Millisecond), "WithTimeout(-1ms)"},
		{c, distributed.WithClientClock(nil), "WithClientClock(nil)"},
		{c, distributed.WithClockTolerance(0), "WithClockTolerance(0s)"},
		{c, distributed.WithClockTolerance(-time.Second), "WithClockTolerance(-1s)"},
		{c, distributed.WithBatching(distributed.Batching{MaxBatch: -5}), "WithBatching"},
		{c, distributed.WithBatching(distributed.Batching{MaxInFlight: -1}), "WithBatching"},
		// WAIT 0 would block forever: invalid values used to fail every call instead.
		{c, distributed.WithReplicaAck(0, time.Second), "WithReplicaAck(0, 1s)"},
		{c, distributed.WithReplicaAck(-1, time.Second), "WithReplicaAck(-1, 1s)"},
		{c, distributed.WithReplicaAck(1, 0), "WithReplicaAck(1, 0s)"},
		{c, distributed.WithReplicaAck(1, -time.Millisecond), "WithReplicaAck(1, -1ms)"},
	} {
		s, err := distributed.New(tc.client, tc.opt)
		if !errors.Is(err, algo.ErrInvalidConfig) || s != nil {
			t.Errorf("%s: New = %v, %v; want nil and an error wrapping ErrInvalidConfig", tc.want, s, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "distributed.New") || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: error %q does not name distributed.New and the cause", tc.want, msg)
		}
	}
}

// TestNewAccepts checks the documented zero values and that nil options are skipped.
func TestNewAccepts(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = c.Close() })
	for name, opts := range map[string][]distributed.Option{
		"no options":       nil,
		"nil options":      {nil, distributed.WithPrefix("p:"), nil},
		"no timeout":       {distributed.WithTimeout(0)},
		"empty prefix":     {distributed.WithPrefix("")},
		"default batching": {distributed.WithBatching(distributed.Batching{})},
		"client clock":     {distributed.WithClientClock(clockx.NewFake(time.Unix(0, 0)))},
		"clock tolerance":  {distributed.WithClientClock(clockx.NewFake(time.Unix(0, 0))), distributed.WithClockTolerance(time.Millisecond)},
		"unused tolerance": {distributed.WithClockTolerance(time.Hour)},
		"replica ack":      {distributed.WithReplicaAck(1, time.Millisecond)},
		"clamped batching": {distributed.WithBatching(distributed.Batching{MaxBatch: 1 << 40, MaxInFlight: 1 << 40})},
	} {
		s, err := distributed.New(c, opts...)
		if err != nil || s == nil {
			t.Errorf("%s: New = %v, %v; want a store", name, s, err)
			continue
		}
		_ = s.Close()
	}
}
