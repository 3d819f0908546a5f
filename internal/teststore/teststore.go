package teststore

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/local"
)

// Local returns local.New(opts...), failing tb if New does.
func Local(tb testing.TB, opts ...local.Option) *local.Store {
	tb.Helper()
	s, err := local.New(opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// Redis returns distributed.New(c, opts...), failing tb if New does.
func Redis(tb testing.TB, c redis.UniversalClient, opts ...distributed.Option) *distributed.Store {
	tb.Helper()
	s, err := distributed.New(c, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
