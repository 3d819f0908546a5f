package leasing_test

import (
	"testing"

	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/leasing"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
	"github.com/ratekit/limiter/store/storetest"
)

func leasedFactory(t *testing.T, clk *clockx.Fake) store.Store {
	s, err := leasing.New(teststore.Local(t, local.WithClock(clk)), 4)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.RunContracts(t, leasedFactory)
}
