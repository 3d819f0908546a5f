package adaptive_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/ratekit/limiter/adaptive"
	"github.com/ratekit/limiter/algo"
)

// Every error of New, for a bad algorithm or a bad option, wraps the module's one
// ErrInvalidConfig (algo.ErrInvalidConfig), as every other constructor's does.
func TestNewErrorsWrapErrInvalidConfig(t *testing.T) {
	t.Parallel()
	high := func() float64 { return 1 }
	bad := map[string]struct {
		a    adaptive.Algorithm
		opts []adaptive.Option
	}{
		"nil algorithm":            {a: nil},
		"aimd min above max":       {a: adaptive.AIMD{Min: 10, Max: 5}},
		"aimd initial below min":   {a: adaptive.AIMD{Initial: 2, Min: 3}},
		"aimd negative max":        {a: adaptive.AIMD{Max: -1}},
		"aimd backoff 1":           {a: adaptive.AIMD{Backoff: 1}},
		"aimd increase negative":   {a: adaptive.AIMD{Increase: -1}},
		"aimd increase inf":        {a: adaptive.AIMD{Increase: math.Inf(1)}},
		"aimd timeout negative":    {a: adaptive.AIMD{Timeout: -time.Second}},
		"gradient tolerance 0.5":   {a: adaptive.Gradient{Tolerance: 0.5}},
		"gradient smoothing 2":     {a: adaptive.Gradient{Smoothing: 2}},
		"gradient window negative": {a: adaptive.Gradient{LongWindow: -1}},
		"gradient initial above":   {a: adaptive.Gradient{Initial: 2000}},
		"fixed 0":                  {a: adaptive.Fixed{}},
		"shedding threshold 0":     {a: adaptive.Fixed{Limit: 1}, opts: []adaptive.Option{adaptive.WithLoadShedding(high, 0)}},
		"shedding threshold NaN":   {a: adaptive.Fixed{Limit: 1}, opts: []adaptive.Option{adaptive.WithLoadShedding(high, math.NaN())}},
		"shedding threshold < 0":   {a: adaptive.Fixed{Limit: 1}, opts: []adaptive.Option{adaptive.WithLoadShedding(high, -1)}},
	}
	for name, c := range bad {
		l, err := adaptive.New(c.a, c.opts...)
		if !errors.Is(err, algo.ErrInvalidConfig) || l != nil {
			t.Errorf("%s: New = %v, %v; want nil and an error wrapping algo.ErrInvalidConfig", name, l, err)
		}
	}
}
