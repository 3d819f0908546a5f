package distributed

import (
	"context"
	"net"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// dialWatch is a go-redis hook that remembers the last failed dial of the client, so that
// a call that ran out of time can say why. go-redis retries a failed dial (DialerRetries,
// 100 ms apart) and then the command (MaxRetries) until the call's deadline, and returns
// only the deadline: the "connection refused" or "no such host" that caused it reached
// its log alone. The hook observes dials only: the command hooks are the next ones
// unchanged, so it costs nothing per command.
type dialWatch struct {
	last atomic.Pointer[dialFailure] // nil once a dial succeeds
}

type dialFailure struct {
	err error
	at  time.Time
}

var _ redis.Hook = (*dialWatch)(nil)

// watchDials adds w to client, or to each node a Cluster or Ring client creates from now
// on (their dials are their nodes'; the nodes a Ring already has are not watched).
func watchDials(client redis.UniversalClient, w *dialWatch) {
	if c, ok := client.(interface{ OnNewNode(func(*redis.Client)) }); ok {
		c.OnNewNode(func(node *redis.Client) { node.AddHook(w) })
		return
	}
	client.AddHook(w)
}

func (w *dialWatch) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		switch {
		case err != nil:
			w.last.Store(&dialFailure{err: err, at: time.Now()})
		case w.last.Load() != nil:
			w.last.Store(nil)
		}
		return conn, err
	}
}

func (w *dialWatch) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (w *dialWatch) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// cause returns the error of the last dial if it failed within the last d and no dial
// has succeeded since, else nil.
func (w *dialWatch) cause(d time.Duration) error {
	f := w.last.Load()
	if f == nil || time.Since(f.at) > d {
		return nil
	}
	return f.err
}
