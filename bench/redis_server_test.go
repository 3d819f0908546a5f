package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisAddrEnv names a Redis to use instead of starting one. It must be a throw-away
// server: the benchmarks FLUSHALL it.
const redisAddrEnv = "BENCH_REDIS_ADDR"

// startRedis sets redisAddr: BENCH_REDIS_ADDR when set, otherwise a redis-server of its
// own on a free local port, without persistence, in a temporary directory. The returned
// function stops what it started.
func startRedis() (stop func(), err error) {
	if addr := os.Getenv(redisAddrEnv); addr != "" {
		redisAddr = addr
		return func() {}, nil
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return func() {}, err
	}
	port, err := freePort()
	if err != nil {
		return func() {}, err
	}
	dir, err := os.MkdirTemp("", "bench-redis-")
	if err != nil {
		return func() {}, err
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir)
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return func() {}, err
	}
	stop = func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = os.RemoveAll(dir)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err = c.Ping(ctx).Err()
		cancel()
		if err == nil {
			redisAddr = addr
			return stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return func() {}, fmt.Errorf("redis-server on %s did not answer: %w", addr, err)
		}
		time.Sleep(20 * time.Millisecond) // polling a process start-up, not synchronising tests
	}
}

// freePort asks the kernel for an unused TCP port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	a, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("not a TCP address")
	}
	return a.Port, nil
}
