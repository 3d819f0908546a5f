// Package testredis starts throw-away redis-servers for the tests of the rls module, which
// cannot import the core module's internal/redistest.
package testredis

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Start starts a throw-away redis-server on a free loopback port and returns its
// address. The core module's internal/redistest cannot be imported from this module, so
// this is its small twin: it skips without redis-server unless LIMITER_REQUIRE_REDIS is
// set.
func Start(tb testing.TB) string {
	tb.Helper()
	return start(tb, false)
}

func start(tb testing.TB, cluster bool) string {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("LIMITER_REQUIRE_REDIS") != "" {
			tb.Fatalf("redis-server not found: %v", err)
		}
		tb.Skip("redis-server not found on PATH: THE REDIS TESTS DID NOT RUN")
	}
	var lastErr error
	for range 5 { // a port taken between the probe and the start: try another
		port, err := freePort(cluster)
		if err != nil {
			tb.Fatal(err)
		}
		dir := tb.TempDir()
		args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir}
		if cluster {
			args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"))
		}
		cmd := exec.Command(bin, args...)
		if err := cmd.Start(); err != nil {
			tb.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if lastErr = waitRedis(addr, exited); lastErr == nil {
			tb.Cleanup(func() { cmd.Process.Kill(); <-exited })
			return addr
		}
		cmd.Process.Kill()
		<-exited
	}
	tb.Fatalf("could not start redis-server: %v", lastErr)
	return ""
}

// freePort finds a free loopback port; for a cluster node, one whose bus port (+10000)
// is free too.
func freePort(cluster bool) (int, error) {
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !cluster {
			return port, nil
		}
		if port+10000 > 65535 {
			continue
		}
		if bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000)); err == nil {
			bus.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free port pair for a cluster node")
}

// StartCluster starts a Redis Cluster of masters nodes, each holding an equal share of
// the slots, and returns the nodes' addresses once every node reports the cluster ok.
func StartCluster(tb testing.TB, masters int) []string {
	tb.Helper()
	addrs := make([]string, masters)
	clients := make([]*redis.Client, masters)
	for i := range addrs {
		addrs[i] = start(tb, true)
		clients[i] = redis.NewClient(&redis.Options{Addr: addrs[i]})
		defer clients[i].Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	per := 16384 / masters
	for i, c := range clients {
		lo, hi := i*per, (i+1)*per-1
		if i == masters-1 {
			hi = 16383
		}
		if err := c.ClusterAddSlotsRange(ctx, lo, hi).Err(); err != nil {
			tb.Fatalf("CLUSTER ADDSLOTSRANGE on %s: %v", addrs[i], err)
		}
	}
	for _, a := range addrs[1:] {
		host, port, _ := net.SplitHostPort(a)
		if err := clients[0].ClusterMeet(ctx, host, port).Err(); err != nil {
			tb.Fatalf("CLUSTER MEET %s: %v", a, err)
		}
	}
	want := []string{"cluster_state:ok", "cluster_slots_assigned:16384", "cluster_known_nodes:" + strconv.Itoa(masters)}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for i := 0; i < masters; {
		info, err := clients[i].ClusterInfo(ctx).Result()
		if err == nil && containsAll(info, want) {
			i++
			continue
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("cluster not ok after 30 s: %s says %q (%v)", addrs[i], info, err)
		case <-tick.C:
		}
	}
	return addrs
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// waitRedis waits for the server to answer PING, or to exit, for at most 15 s of real time
// (a loaded machine may take seconds to start a process).
func waitRedis(addr string, exited <-chan struct{}) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.After(15 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := c.Ping(context.Background()).Err(); err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("redis-server on %s exited", addr)
		case <-deadline:
			return fmt.Errorf("redis-server on %s did not answer in 15 s", addr)
		case <-tick.C:
		}
	}
}
