package clockx_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/limiter/clockx"
)

// A Fake clock's Sleep moves virtual time at once: a simulated hour takes no time.
func ExampleNewFake() {
	clk := clockx.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	_ = clk.Sleep(context.Background(), time.Hour)
	clk.Add(30 * time.Second)
	fmt.Println(clk.Now().Format(time.TimeOnly))
	// Output: 01:00:30
}
