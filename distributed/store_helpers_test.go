package distributed_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/local"
)

// mustLocal returns local.New(opts...), failing the test if New does.
func mustLocal(tb testing.TB, opts ...local.Option) *local.Store {
	tb.Helper()
	s, err := local.New(opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// mustDistributed returns distributed.New(c, opts...), failing the test if New does.
func mustDistributed(tb testing.TB, c redis.UniversalClient, opts ...distributed.Option) *distributed.Store {
	tb.Helper()
	s, err := distributed.New(c, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
