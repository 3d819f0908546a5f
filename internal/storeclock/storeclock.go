package storeclock

import (
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/store"
)

// Of returns s's clock when s implements store.Clocked and reports one, else
// clockx.Real().
func Of(s any) clockx.Clock {
	if c, ok := s.(store.Clocked); ok {
		if clk := c.Clock(); clk != nil {
			return clk
		}
	}
	return clockx.Real()
}
