package distributed_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/store"
)

// scriptSHA is the SHA-1 Redis files a script under.
func scriptSHA(src string) string { return redis.NewScript(src).Hash() }

func scriptCached(t *testing.T, c redis.Cmdable, src string) bool {
	t.Helper()
	ok, err := c.ScriptExists(context.Background(), scriptSHA(src)).Result()
	if err != nil {
		t.Fatalf("SCRIPT EXISTS: %v", err)
	}
	return ok[0]
}

func TestNoScriptIsReloaded(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := ctxTimeout(t, 30*time.Second)
	s := newStore(t, c, distributed.WithClientClock(fakeClock()))
	a := counter{Limit: 5}

	for i := 0; i < 3; i++ {
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if scriptCached(t, c, counterScript.Source) {
			t.Fatal("script cached right after SCRIPT FLUSH")
		}
		d, err := s.Apply(ctx, "k", a, algo.Request{N: 1})
		if err != nil {
			t.Fatalf("Apply %d after SCRIPT FLUSH: %v", i, err)
		}
		if got, want := d.Remaining, int64(5-1-i); !d.Allowed || got != want {
			t.Fatalf("Apply %d after SCRIPT FLUSH = %+v, want allowed with Remaining %d", i, d, want)
		}
		if !scriptCached(t, c, counterScript.Source) {
			t.Errorf("Apply %d did not leave the script cached for the next EVALSHA", i)
		}
	}
}

func TestRestartResumesDecisions(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := ctxTimeout(t, 30*time.Second)
	s := newStore(t, c, distributed.WithClientClock(fakeClock()))
	a := counter{Limit: 3}

	for i := 0; i < 3; i++ {
		if d, err := s.Apply(ctx, "k", a, algo.Request{N: 1}); err != nil || !d.Allowed {
			t.Fatalf("Apply %d = %+v, %v; want allowed", i, d, err)
		}
	}
	if d, err := s.Apply(ctx, "k", a, algo.Request{N: 1}); err != nil || d.Allowed {
		t.Fatalf("Apply over the limit = %+v, %v; want denied", d, err)
	}
	srv.Restart() // no persistence: the state and the script cache are gone
	// go-redis may hand out a pooled connection that died with the old process; it retries
	// such calls on a fresh connection, so the first call after the restart succeeds.
	d, err := s.Apply(ctx, "k", a, algo.Request{N: 1})
	if err != nil {
		t.Fatalf("Apply after Restart: %v", err)
	}
	if got, want := d.Remaining, int64(2); !d.Allowed || got != want {
		t.Fatalf("Apply after Restart = %+v, want allowed with Remaining %d (state lost with the server)", d, want)
	}
	if !scriptCached(t, c, counterScript.Source) {
		t.Error("script not cached after the first call on the restarted server")
	}
}

func TestWrongType(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := ctxTimeout(t, 30*time.Second)
	s := teststore.Redis(t, c, distributed.WithTimeout(testTimeout), distributed.WithPrefix("wt:"), distributed.WithClientClock(fakeClock()))
	a := counter{Limit: 3}
	// Another application stored a hash where the counter keeps its count: the script's
	// GET fails with WRONGTYPE.
	if err := c.HSet(ctx, "wt:{user 1}:ctr", "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	_, err := s.Apply(ctx, "user 1", a, algo.Request{N: 1})
	if err == nil {
		t.Fatal("Apply on a key holding a hash succeeded")
	}
	t.Log(err)
	if !errors.Is(err, store.ErrKeyUnavailable) || !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("error %v does not wrap store.ErrKeyUnavailable and store.ErrUnavailable: one key's failure", err)
	}
	for _, want := range []string{"WRONGTYPE", `"user 1"`, `wt:{user 1}:ctr`, "another type"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	if err := s.Refund(ctx, "user 1", a, 1, 0); err == nil || !errors.Is(err, store.ErrKeyUnavailable) {
		t.Errorf("Refund on a key holding a hash = %v, want an error wrapping store.ErrKeyUnavailable", err)
	}
}

func TestBadReplies(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := ctxTimeout(t, 30*time.Second)
	s := newStore(t, c)
	for _, tc := range []struct{ reply, mention string }{
		{"short", "array of 3"},
		{"long", "array of 8"},
		{"string", "junk"},
		{"status", "OK"},
		{"integer", "42"},
		{"nested", "element 7"},
		{"text", "element 7"},
		{"allowed2", "allowed is 2"},
		{"negative", "remaining is -1"},
		{"none", "nil"},
		{"error", "boom"},
		{"raise", "raised"},
	} {
		_, err := s.Apply(ctx, "k", junk{Reply: tc.reply}, algo.Request{N: 1})
		if err == nil {
			t.Errorf("reply %s: Apply succeeded", tc.reply)
			continue
		}
		t.Logf("reply %s: %v", tc.reply, err)
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("reply %s: error %v does not wrap store.ErrUnavailable", tc.reply, err)
		}
		// Redis answered: a reply that does not parse, or an error raised by the script,
		// is the script's failure, not an outage. A bare error reply ("ERR boom") cannot
		// be told from the server's own, and counts as an outage.
		if key := tc.reply != "error"; errors.Is(err, store.ErrKeyUnavailable) != key {
			t.Errorf("reply %s: error %v wraps store.ErrKeyUnavailable %v, want %v", tc.reply, err, !key, key)
		}
		if !strings.Contains(err.Error(), tc.mention) || !strings.Contains(err.Error(), "test-junk") {
			t.Errorf("reply %s: error %q does not mention %q and the algorithm", tc.reply, err, tc.mention)
		}
	}
	if err := s.Refund(ctx, "k", junk{Reply: "string"}, 1, 0); err == nil || !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Refund with a string reply = %v, want an error wrapping store.ErrUnavailable", err)
	}
}

// TestBadInput needs no server: bad input is rejected before any call.
func TestBadInput(t *testing.T) {
	t.Parallel()
	// A client nobody listens behind: any call that reached it would fail differently.
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	s := teststore.Redis(t, c, distributed.WithTimeout(testTimeout))
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		key  string
		a    algo.Algorithm
		n    int64
		want error
	}{
		{"empty key", "", counter{Limit: 1}, 1, store.ErrInvalidKey},
		{"nil algorithm", "k", nil, 1, algo.ErrInvalidConfig},
		{"invalid config", "k", counter{}, 1, algo.ErrInvalidConfig},
		{"no Lua twin", "k", plain{}, 1, algo.ErrInvalidConfig},
		{"N = 0", "k", counter{Limit: 1}, 0, algo.ErrInvalidRequest},
	} {
		if _, err := s.Apply(ctx, tc.key, tc.a, algo.Request{N: tc.n}); !errors.Is(err, tc.want) {
			t.Errorf("%s: Apply error = %v, want %v", tc.name, err, tc.want)
		}
		if err := s.Refund(ctx, tc.key, tc.a, tc.n, 0); !errors.Is(err, tc.want) {
			t.Errorf("%s: Refund error = %v, want %v", tc.name, err, tc.want)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(ctx, "k", counter{Limit: 1}, algo.Request{N: 1}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Apply after Close = %v, want store.ErrClosed", err)
	}
	if err := s.Refund(ctx, "k", counter{Limit: 1}, 1, 0); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Refund after Close = %v, want store.ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
}

func TestCloseLeavesClientOpen(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	s := teststore.Redis(t, c)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctxTimeout(t, 10*time.Second)).Err(); err != nil {
		t.Errorf("PING after Store.Close: %v; the store must not close the caller's client", err)
	}
}

func TestServerTime(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s := newStore(t, srv.Client(t)) // no WithClientClock: the script reads TIME
	before := time.Now().Truncate(time.Microsecond)
	d, err := s.Apply(ctxTimeout(t, 10*time.Second), "k", counter{Limit: 1}, algo.Request{N: 1})
	after := time.Now()
	if err != nil || !d.Allowed {
		t.Fatalf("Apply = %+v, %v", d, err)
	}
	// Same machine, same clock: the server read its TIME during the call, however long the
	// call took on a loaded machine.
	if at := time.UnixMicro(d.At); at.Before(before) || at.After(after) {
		t.Errorf("server-time At = %v, want within the call [%v, %v]", at, before, after)
	}
}

// countCmds is a go-redis hook that counts the commands sent, by name, leaving out those
// that set up a new connection.
type countCmds struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *countCmds) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *countCmds) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *countCmds) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name != "hello" && name != "client" { // connection set-up
			h.mu.Lock()
			h.n[name]++
			h.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

func (h *countCmds) take() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.n
	h.n = map[string]int{}
	return n
}

// TestOneRoundTrip counts the commands the store sends on the EVALSHA path (Redis before
// 7): one EVALSHA per decision, plus one EVAL the first time (and after the script cache
// was flushed).
func TestOneRoundTrip(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	hook := &countCmds{n: map[string]int{}}
	c.AddHook(hook)
	ctx := ctxTimeout(t, 30*time.Second)
	s := newStore(t, c, distributed.WithClientClock(fakeClock()), distributed.WithEvalOnly())
	a := algo.SlidingWindowLog{Limit: 10, Window: time.Second}

	check := func(what string, calls int, want map[string]int) {
		t.Helper()
		for i := 0; i < calls; i++ {
			if _, err := s.Apply(ctx, "k", a, algo.Request{N: 1}); err != nil {
				t.Fatal(err)
			}
		}
		if got := hook.take(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %d decisions sent %v, want %v", what, calls, got, want)
		}
	}
	check("first call", 1, map[string]int{"evalsha": 1, "eval": 1})
	check("later calls", 50, map[string]int{"evalsha": 50})
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	hook.take()
	check("after SCRIPT FLUSH", 2, map[string]int{"evalsha": 2, "eval": 1})
}
