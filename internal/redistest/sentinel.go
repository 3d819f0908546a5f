package redistest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelMaster is the name under which a [Failover]'s sentinel monitors its master.
const SentinelMaster = "mymaster"

// Failover is a throw-away Sentinel group on 127.0.0.1: a master, one replica of it, and one
// `redis-server --sentinel` that monitors them with quorum 1, so a test can promote the
// replica (SENTINEL FAILOVER) or kill the master and watch the sentinel promote it.
type Failover struct {
	Master   *Server
	Replica  *Server
	Sentinel *Server
}

// StartFailover starts the master, the replica (in sync with the master before it returns)
// and the sentinel (which knows the replica before it returns), all killed by t.Cleanup.
// downAfter is the sentinel's down-after-milliseconds: how long the master must not answer
// before a kill is detected.
func StartFailover(tb testing.TB, downAfter time.Duration) *Failover {
	tb.Helper()
	bin := Require(tb)
	master, err := startServer(tb, bin, false)
	if err != nil {
		tb.Fatal(err)
	}
	f := &Failover{Master: master, Replica: StartReplica(tb, master)}

	dir := tb.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	text := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 1\n"+
		"sentinel down-after-milliseconds %s %d\n"+
		"sentinel failover-timeout %s 10000\n"+
		"sentinel parallel-syncs %s 1\n",
		SentinelMaster, master.Port(), SentinelMaster, downAfter.Milliseconds(), SentinelMaster, SentinelMaster)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		tb.Fatal(err)
	}
	f.Sentinel = startWith(tb, bin, []string{conf, "--sentinel"}, nil)
	f.waitSentinelKnowsReplica(tb)
	return f
}

// StartReplica starts a replica of master and returns once master sees it online. It is
// killed by t.Cleanup.
func StartReplica(tb testing.TB, master *Server) *Server {
	tb.Helper()
	r := startWith(tb, Require(tb), nil, []string{"--replicaof", "127.0.0.1", strconv.Itoa(master.Port())})
	waitReplicas(tb, master, 1)
	return r
}

// startWith starts a server with the given leading arguments and extra flags.
func startWith(tb testing.TB, bin string, pre, extra []string) *Server {
	tb.Helper()
	var lastErr error
	for try := 0; try < startTries; try++ {
		port, err := freePort(false)
		if err != nil {
			tb.Fatal(err)
		}
		s := &Server{tb: tb, bin: bin, dir: tb.TempDir(), port: port, pre: pre, extra: extra}
		if lastErr = s.start(); lastErr == nil {
			tb.Cleanup(s.Kill)
			return s
		}
	}
	tb.Fatalf("redistest: could not start redis-server after %d tries: %v", startTries, lastErr)
	return nil
}

// Client returns a go-redis failover client that finds the master through the sentinel,
// closed by t.Cleanup. It enables ContextTimeoutEnabled like [Server.Client].
func (f *Failover) Client(tb testing.TB) *redis.Client {
	tb.Helper()
	c := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:            SentinelMaster,
		SentinelAddrs:         []string{f.Sentinel.Addr()},
		ContextTimeoutEnabled: true,
	})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// MasterAddr returns the address the sentinel names as the master now.
func (f *Failover) MasterAddr(ctx context.Context) (string, error) {
	c := redis.NewSentinelClient(&redis.Options{Addr: f.Sentinel.Addr()})
	defer c.Close()
	addr, err := c.GetMasterAddrByName(ctx, SentinelMaster).Result()
	if err != nil {
		return "", err
	}
	if len(addr) != 2 {
		return "", fmt.Errorf("redistest: sentinel named master %v", addr)
	}
	return addr[0] + ":" + addr[1], nil
}

// Promote asks the sentinel for a planned failover (SENTINEL FAILOVER) and returns once it
// names the replica as the master.
func (f *Failover) Promote(tb testing.TB) {
	tb.Helper()
	c := redis.NewSentinelClient(&redis.Options{Addr: f.Sentinel.Addr()})
	defer c.Close()
	ctx := context.Background()
	if err := c.Failover(ctx, SentinelMaster).Err(); err != nil {
		tb.Fatalf("redistest: SENTINEL FAILOVER: %v", err)
	}
	f.WaitMaster(tb, f.Replica.Addr())
}

// WaitMaster returns once the sentinel names addr as the master.
func (f *Failover) WaitMaster(tb testing.TB, addr string) {
	tb.Helper()
	poll(tb, "the sentinel to name "+addr+" master", func(ctx context.Context) (bool, error) {
		got, err := f.MasterAddr(ctx)
		return got == addr, err
	})
}

// WaitReplicaOf returns once s is a replica whose link to its master is up (after a
// failover: the old master, reconfigured by the sentinel, has synced with the new one).
func (f *Failover) WaitReplicaOf(tb testing.TB, s *Server, master *Server) {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), ContextTimeoutEnabled: true})
	defer c.Close()
	poll(tb, s.Addr()+" to replicate "+master.Addr(), func(ctx context.Context) (bool, error) {
		info, err := c.Info(ctx, "replication").Result()
		if err != nil {
			return false, err
		}
		return infoField(info, "role") == "slave" &&
			infoField(info, "master_port") == strconv.Itoa(master.Port()) &&
			infoField(info, "master_link_status") == "up", nil
	})
}

// waitReplicas returns once master has n replicas online.
func waitReplicas(tb testing.TB, master *Server, n int) {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: master.Addr(), ContextTimeoutEnabled: true})
	defer c.Close()
	poll(tb, fmt.Sprintf("%d replicas online on %s", n, master.Addr()), func(ctx context.Context) (bool, error) {
		info, err := c.Info(ctx, "replication").Result()
		if err != nil {
			return false, err
		}
		online := 0
		for i := 0; i < n; i++ {
			if strings.Contains(infoField(info, "slave"+strconv.Itoa(i)), "state=online") {
				online++
			}
		}
		return online == n, nil
	})
}

// waitSentinelKnowsReplica returns once the sentinel lists the replica as a healthy one,
// which SENTINEL FAILOVER needs.
func (f *Failover) waitSentinelKnowsReplica(tb testing.TB) {
	tb.Helper()
	c := redis.NewSentinelClient(&redis.Options{Addr: f.Sentinel.Addr()})
	defer c.Close()
	want := strconv.Itoa(f.Replica.Port())
	poll(tb, "the sentinel to know the replica", func(ctx context.Context) (bool, error) {
		replicas, err := c.Replicas(ctx, SentinelMaster).Result()
		if err != nil {
			return false, err
		}
		for _, r := range replicas {
			if r["port"] == want && r["flags"] == "slave" && r["master-link-status"] == "ok" {
				return true, nil
			}
		}
		return false, nil
	})
}

// poll calls cond every pollInterval until it reports true, failing the test after 30 s:
// a generous bound, since these are real processes on a possibly loaded machine.
func poll(tb testing.TB, what string, cond func(ctx context.Context) (bool, error)) {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var lastErr error
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		ok, err := cond(ctx)
		cancel()
		if ok {
			return
		}
		lastErr = err
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: waited 30 s for %s (last error: %v)", what, lastErr)
		}
		time.Sleep(10 * pollInterval)
	}
}
