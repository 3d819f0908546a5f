package distributed

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
)

// ErrNotReplicated reports a decision that Redis made but that WithReplicaAck's replicas did
// not confirm in time. It is always wrapped together with store.ErrUnavailable, so the
// failure policy answers the call: the decision does not count (FailClosed denies), even
// though the master may have recorded it (its permits stay taken there).
var ErrNotReplicated = errors.New("distributed: decision not acknowledged by enough replicas")

// replicaAck is the WithReplicaAck setting.
type replicaAck struct {
	replicas int
	timeout  time.Duration
}

// WithReplicaAck makes every script call (Apply, Refund, ApplyAll, the semaphore
// operations) count only once replicas replicas hold its writes: the store sends the
// script and a WAIT replicas timeout in one pipeline (still one round trip, on the
// connection that ran the script), and fails the call with an error wrapping
// ErrNotReplicated and store.ErrUnavailable when WAIT confirms fewer replicas. The
// failure policy answers such a call like any other store failure.
//
// Without it a failover can forget decisions that had not reached the promoted replica;
// with it, a decision a caller saw as granted is held by at least replicas replicas (see
// docs/distributed.md, "What a failover can lose").
//
// replicas must be ≥ 1 and timeout > 0 (it is rounded up to whole milliseconds, as WAIT
// takes them; WAIT 0 would block forever); otherwise every call of the store fails with
// an error wrapping algo.ErrInvalidConfig that names the option. Keep timeout below
// WithTimeout, which still bounds the whole round trip. Each call costs the replication
// delay on top of its round trip.
//
// WithReplicaAck works with a single server or a Sentinel failover client
// (redis.NewFailoverClient), and on a Cluster (each call goes to the master of its key,
// where WAIT counts that master's replicas). Calls are not batched while it is set:
// WithBatching is ignored.
func WithReplicaAck(replicas int, timeout time.Duration) Option {
	return optionFunc(func(o *options) { o.ack = &replicaAck{replicas: replicas, timeout: timeout} })
}

// check returns the error every call of a store with an invalid WithReplicaAck returns.
func (r *replicaAck) check() error {
	if r == nil || (r.replicas >= 1 && r.timeout > 0) {
		return nil
	}
	return fmt.Errorf("%w: distributed.WithReplicaAck(%d, %v): replicas must be ≥ 1 and timeout > 0",
		algo.ErrInvalidConfig, r.replicas, r.timeout)
}

// waitMillis is the WAIT timeout: timeout in whole milliseconds, rounded up.
func (r *replicaAck) waitMillis() int64 {
	return int64((r.timeout + time.Millisecond - 1) / time.Millisecond)
}

// runAcked runs sc and WAIT as one pipeline on the server that owns keys[0] and returns the
// script's reply once r.replicas replicas have acknowledged it. WAIT counts the writes of
// the connection it runs on, so both commands go on one connection of one server: the
// client itself for a single server or a failover client, the key's master on a Cluster.
func (s *Store) runAcked(ctx context.Context, sc *redis.Script, keys []string, args []any) (any, error) {
	node, err := s.nodeFor(ctx, keys[0])
	if err != nil {
		return nil, err
	}
	pipe := node.Pipeline()
	cmd := sc.EvalSha(ctx, pipe, keys, args...)
	wait := pipe.Do(ctx, "wait", s.ack.replicas, s.ack.waitMillis())
	_, _ = pipe.Exec(ctx) // each command's outcome is read below
	if isNoScript(cmd.Err()) {
		// The script did not run: send its source, which also caches it there.
		cmd = sc.Eval(ctx, pipe, keys, args...)
		wait = pipe.Do(ctx, "wait", s.ack.replicas, s.ack.waitMillis())
		_, _ = pipe.Exec(ctx)
	}
	reply, err := cmd.Result()
	if err != nil {
		return nil, err
	}
	acked, err := wait.Int64()
	if err != nil {
		return nil, fmt.Errorf("%w: WAIT: %w", ErrNotReplicated, err)
	}
	if acked < int64(s.ack.replicas) {
		return nil, fmt.Errorf("%w: %d of %d replicas within %v", ErrNotReplicated, acked, s.ack.replicas, s.ack.timeout)
	}
	return reply, nil
}

// nodeFor returns the client of the one server that owns key.
func (s *Store) nodeFor(ctx context.Context, key string) (redis.UniversalClient, error) {
	switch c := s.client.(type) {
	case *redis.ClusterClient:
		return c.MasterForKey(ctx, key)
	case *redis.Ring:
		return c.GetShardClientForKey(key)
	default:
		return s.client, nil
	}
}
