package local_test

import (
	"testing"

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
