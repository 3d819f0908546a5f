package local_test

import (
	"testing"

	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
	"github.com/ratekit/limiter/store/storetest"
)

// TestConformance runs the store conformance suite against the local store.
func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, clk *clockx.Fake) store.Store { return teststore.Local(t, local.WithClock(clk)) })
}
