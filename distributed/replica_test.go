package distributed_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/store"
)

// TestReplicaAck checks WithReplicaAck against a master with one replica: decisions count
// while the replica acknowledges them, and fail with ErrNotReplicated (and
// store.ErrUnavailable) once it is gone, within about the WAIT timeout.
func TestReplicaAck(t *testing.T) {
	master := redistest.Start(t)
	replica := redistest.StartReplica(t, master)
	ctx := context.Background()
	alg := algo.FixedWindow{Limit: 100, Window: time.Hour}
	s := newStore(t, master.Client(t), distributed.WithClientClock(fakeClock()),
		distributed.WithReplicaAck(1, 200*time.Millisecond))

	for i := 0; i < 3; i++ {
		d, err := s.Apply(ctx, "k", alg, algo.Request{N: 1})
		if err != nil || !d.Allowed {
			t.Fatalf("apply %d with a replica: %+v, %v", i, d, err)
		}
	}
	if err := s.Refund(ctx, "k", alg, 1, 0); err != nil {
		t.Fatalf("refund with a replica: %v", err)
	}
	// The replica holds what the master decided, at once: WAIT returned only after it had.
	rc := replica.Client(t)
	keys, err := rc.Keys(ctx, "*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("replica keys: %v, %v; want the limiter's state", keys, err)
	}

	replica.Kill()
	start := time.Now()
	_, err = s.Apply(ctx, "k", alg, algo.Request{N: 1})
	if !errors.Is(err, distributed.ErrNotReplicated) || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("apply without the replica: %v, want ErrNotReplicated and ErrUnavailable", err)
	}
	// WAIT returns after its timeout; the store's 500 ms timeout bounds the round trip.
	if el := time.Since(start); el < 200*time.Millisecond {
		t.Errorf("apply without the replica failed after %v, before the WAIT timeout of 200ms", el)
	}
	if err := s.Refund(ctx, "k", alg, 1, 0); !errors.Is(err, distributed.ErrNotReplicated) {
		t.Errorf("refund without the replica: %v, want ErrNotReplicated", err)
	}
}

// TestReplicaAckNoScript checks that a master that lost its scripts is sent the source,
// with the WAIT, as without WithReplicaAck.
func TestReplicaAckNoScript(t *testing.T) {
	master := redistest.Start(t)
	redistest.StartReplica(t, master)
	ctx := context.Background()
	client := master.Client(t)
	s := newStore(t, client, distributed.WithReplicaAck(1, time.Second))
	alg := algo.TokenBucket{Rate: 1, Burst: 5}
	for i := 0; i < 3; i++ {
		if err := client.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		d, err := s.Apply(ctx, "k", alg, algo.Request{N: 1})
		if err != nil || !d.Allowed || d.Remaining != int64(4-i) {
			t.Fatalf("apply %d after SCRIPT FLUSH: %+v, %v", i, d, err)
		}
	}
}

// TestReplicaAckCluster checks that on a Cluster each call goes, with its WAIT, to the
// master of its key: the masters of redistest's cluster have no replicas, so every call
// fails with ErrNotReplicated, and none with a routing error.
func TestReplicaAckCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	s := newStore(t, c.Client(t), distributed.WithReplicaAck(1, 10*time.Millisecond))
	for i := 0; i < 6; i++ {
		_, err := s.Apply(context.Background(), "key"+strconv.Itoa(i), algo.GCRA{Rate: 1, Burst: 1}, algo.Request{N: 1})
		if !errors.Is(err, distributed.ErrNotReplicated) {
			t.Fatalf("key%d on a cluster without replicas: %v, want ErrNotReplicated", i, err)
		}
	}
}

// TestReplicaAckFailover runs traffic through a Sentinel failover client while the replica
// is promoted (SENTINEL FAILOVER) or the master is killed, and counts the grants that the
// new master does not know of. With WithReplicaAck(1, ...) there must be none: a caller
// saw a grant only once the replica held it. Without it, the figures are logged (a planned
// failover forgets the grants the old master made after the promotion).
func TestReplicaAckFailover(t *testing.T) {
	for _, tc := range []struct {
		name string
		ack  bool
		kill bool
	}{
		{"planned/ack", true, false},
		{"kill/ack", true, true},
		{"planned/no-ack", false, false},
		{"kill/no-ack", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := redistest.StartFailover(t, 500*time.Millisecond)
			client, prefix, clock := f.Client(t), freshPrefix(), fakeClock()
			opts := []distributed.Option{distributed.WithPrefix(prefix), distributed.WithClientClock(clock)}
			// reader counts on the new master without waiting for a replica it may not have yet.
			reader := newStore(t, client, opts...)
			if tc.ack {
				opts = append(opts, distributed.WithReplicaAck(1, 100*time.Millisecond))
			}
			s := newStore(t, client, opts...)
			r := runFailover(t, f, s, reader, tc.kill)
			t.Logf("%s: %d grants, %d failed calls over %v, new master counts %d: %d forgotten",
				tc.name, r.granted, r.failed, r.failedFor, r.counted, r.forgotten())
			if tc.ack && r.forgotten() > 0 {
				t.Errorf("with WithReplicaAck, the new master forgot %d of %d grants", r.forgotten(), r.granted)
			}
		})
	}
}

// failoverRun is what one failover under traffic showed.
type failoverRun struct {
	granted   int64         // decisions a caller saw as granted, the last check included
	failed    int64         // calls that failed
	failedFor time.Duration // from the first failed call to the last
	counted   int64         // permits the new master holds as taken
}

func (r failoverRun) forgotten() int64 { return max(0, r.granted-r.counted) }

// failoverLimit is large enough that the traffic of a test never reaches it: the count of
// permits taken is then Limit − Remaining.
const failoverLimit = 1 << 40

// runFailover sends decisions on one key from a few goroutines, fails the master over, lets
// the traffic reach the new master, and compares what callers were granted with what the
// new master counts. reader is a store on the same keys without WithReplicaAck: right
// after a failover the new master has no replica, so s fails every call until the old
// master has rejoined as one.
func runFailover(t *testing.T, f *redistest.Failover, s, reader *distributed.Store, kill bool) failoverRun {
	t.Helper()
	alg := algo.FixedWindow{Limit: failoverLimit, Window: time.Hour} // the fake clock stands still
	var (
		granted, failed atomic.Int64
		mu              sync.Mutex
		first, last     time.Time
		stop            = make(chan struct{})
		wg              sync.WaitGroup
	)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				d, err := s.Apply(ctx, "hot", alg, algo.Request{N: 1})
				cancel()
				switch {
				case err == nil && d.Allowed:
					granted.Add(1)
				case err != nil:
					failed.Add(1)
					now := time.Now()
					mu.Lock()
					if first.IsZero() {
						first = now
					}
					last = now
					mu.Unlock()
				}
			}
		}()
	}
	// Traffic on the old master first, then the failover.
	waitCalls(t, f.Master, 200)
	if kill {
		f.Master.Kill()
		f.WaitMaster(t, f.Replica.Addr())
	} else {
		f.Promote(t)
	}
	// The callers have moved to the new master once it has run a few hundred scripts.
	waitCalls(t, f.Replica, 300)
	close(stop)
	wg.Wait()

	// One more decision, on the new master, reads how many permits it counts.
	d, err := reader.Apply(context.Background(), "hot", alg, algo.Request{N: 1})
	if err != nil || !d.Allowed {
		t.Fatalf("last decision on the new master: %+v, %v", d, err)
	}
	r := failoverRun{granted: granted.Load() + 1, failed: failed.Load(), counted: failoverLimit - d.Remaining}
	if !first.IsZero() {
		r.failedFor = last.Sub(first)
	}
	return r
}

// waitCalls returns once s has run at least n scripts (INFO commandstats), failing the
// test after a generous 60 s.
func waitCalls(t *testing.T, s *redistest.Server, n int64) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), ContextTimeoutEnabled: true})
	defer c.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		info, err := c.Info(ctx, "commandstats").Result()
		cancel()
		if err == nil && scriptCalls(info) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s ran fewer than %d scripts in 60 s (last error %v)", s.Addr(), n, err)
		}
		time.Sleep(20 * time.Millisecond) // polling a real server's counter, not synchronising
	}
}

// scriptCalls sums the calls of EVAL and EVALSHA in an INFO commandstats reply.
func scriptCalls(info string) int64 {
	var total int64
	for _, line := range strings.Split(info, "\n") {
		for _, cmd := range []string{"cmdstat_evalsha:", "cmdstat_eval:", "cmdstat_fcall:"} {
			rest, ok := strings.CutPrefix(strings.TrimSpace(line), cmd)
			if !ok {
				continue
			}
			var calls int64
			if _, err := fmt.Sscanf(rest, "calls=%d", &calls); err == nil {
				total += calls
			}
		}
	}
	return total
}
