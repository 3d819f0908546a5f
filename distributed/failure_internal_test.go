package distributed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/store"
)

// redisErr is an error reply of Redis, as go-redis returns it.
type redisErr string

func (e redisErr) Error() string { return string(e) }
func (redisErr) RedisError()     {}

// TestKeyFault classifies the errors a script call meets: the replies of Redis 7 and of
// Redis 6 (which embeds the error of a command inside "Error running script") that concern
// the call's key or script, and those that describe the server or the network.
func TestKeyFault(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err error
		key bool
	}{
		// Redis 7.
		{redisErr("WRONGTYPE Operation against a key holding the wrong kind of value script: fd1f, on @user_script:1."), true},
		{redisErr("WRONGTYPE Operation against a key holding the wrong kind of value script: f, on @user_function:2."), true},
		{redisErr("ERR user_script:1: attempt to perform arithmetic on a nil value script: e8f6, on @user_script:1."), true},
		{redisErr("ERR value is not an integer or out of range script: 6163, on @user_script:1."), true},
		{redisErr("ERR user_function:3: attempt to perform arithmetic on a nil value script: g, on @user_function:3."), true},
		{redisErr("READONLY You can't write against a read only replica. script: 6163, on @user_script:1."), false},
		{redisErr("OOM command not allowed when used memory > 'maxmemory'. script: 6163, on @user_script:1."), false},
		// Redis 6.
		{redisErr("ERR Error running script (call to f_fd1f): @user_script:1: WRONGTYPE Operation against a key holding the wrong kind of value"), true},
		{redisErr("ERR Error running script (call to f_e8f6): @user_script:1: user_script:1: attempt to perform arithmetic on a nil value"), true},
		{redisErr("ERR Error running script (call to f_6163): @user_script:1: @user_script: 1: -READONLY You can't write against a read only replica."), false},
		{redisErr("ERR Error running script (call to f_6163): @user_script:1: @user_script: 1: -OOM command not allowed when used memory > 'maxmemory'."), false},
		// The server's conditions and the network.
		{redisErr("LOADING Redis is loading the dataset in memory"), false},
		{redisErr("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT."), false},
		{redisErr("CLUSTERDOWN The cluster is down"), false},
		{redisErr("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."), false},
		{redisErr("TRYAGAIN Multiple keys request during rehashing of slot"), false},
		{redisErr("NOREPLICAS Not enough good replicas to write."), false},
		{redisErr("MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk."), false},
		{redisErr("NOAUTH Authentication required."), false},
		{redisErr("ERR max number of clients reached"), false},
		{redisErr("ERR boom"), false}, // an error reply with nothing to say it came from a script
		{context.DeadlineExceeded, false},
		{io.EOF, false},
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, false},
		{syscall.ECONNRESET, false},
		{errTooManyHung, false},
		{errNoSlot, false},
		{redis.Nil, true},
		{fmt.Errorf("batched: %w", redisErr("WRONGTYPE Operation against a key holding the wrong kind of value")), true},
	} {
		if got := keyFault(tc.err) || isWrongType(tc.err); got != tc.key {
			t.Errorf("%v: a key's failure %v, want %v", tc.err, got, tc.key)
		}
	}
	if err := badReply("x", io.EOF); !errors.Is(err, store.ErrKeyUnavailable) || !errors.Is(err, io.EOF) {
		t.Errorf("badReply = %v, want store.ErrKeyUnavailable and the parse error", err)
	}
}
