// Package testredis starts throw-away redis-servers for the tests of the rls module, which
// cannot import the core module's internal/redistest.
package testredis

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Start starts a throw-away redis-server on a free loopback port and returns its
// address. The core module's internal/redistest cannot be imported from this module, so
// this is its small twin: skip without redis-server unless LIMITER_REQUIRE_REDIS is set.
func Start(tb testing.TB) string {
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
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", tb.TempDir())
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
