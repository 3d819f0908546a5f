package distributed

import (
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
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

// WithReplicaAck makes every script call (every method of the Store but Clock and Close)
// count only once replicas replicas hold its writes: the store sends the
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
// takes them; WAIT 0 would block forever); otherwise New returns an error wrapping
// algo.ErrInvalidConfig that names the option. Keep timeout below
// WithTimeout, which still bounds the whole round trip. Each call costs the replication
// delay on top of its round trip.
//
// WithReplicaAck works with a single server or a Sentinel failover client
// (redis.NewFailoverClient), and on a Cluster (each call goes to the master of its key,
// where WAIT counts that master's replicas). Calls are not batched while it is set:
// WithBatching is ignored.
func WithReplicaAck(replicas int, timeout time.Duration) Option {
	return optionFunc(func(o *options) {
		if replicas < 1 || timeout <= 0 {
			o.invalid("WithReplicaAck(%d, %v): replicas must be ≥ 1 and timeout > 0", replicas, timeout)
			return
		}
		o.ack = &replicaAck{replicas: replicas, timeout: timeout}
	})
}

// waitMillis is the WAIT timeout: timeout in whole milliseconds, rounded up.
func (r *replicaAck) waitMillis() int64 {
	return int64((r.timeout + time.Millisecond - 1) / time.Millisecond)
}

// check is the outcome of the WAIT that followed a script call (see Store.sendOnNode):
// nil once r.replicas replicas acknowledged the call's writes.
func (r *replicaAck) check(wait *redis.Cmd) error {
	acked, err := wait.Int64()
	if err != nil {
		return fmt.Errorf("%w: WAIT: %w", ErrNotReplicated, err)
	}
	if acked < int64(r.replicas) {
		return fmt.Errorf("%w: %d of %d replicas within %v", ErrNotReplicated, acked, r.replicas, r.timeout)
	}
	return nil
}
