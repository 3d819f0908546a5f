package limiter_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ratekit/limiter/algo"
)

// TestModelBlindBound: with leases in several processes (modelCeiling.blind), a grant
// from a slice counted before another process's charge is checked without that charge
// (the charge cannot take another process's lease), and with every charge its own
// process made or that came before the slice.
func TestModelBlindBound(t *testing.T) {
	t.Parallel()
	const t0, now = 1_000_000, 2_000_000 // µs: the slice, the charge and the grant
	for _, tc := range []struct {
		name     string
		proc     int   // the charging process (the grant's is 2)
		chargeAt int64 // when it charged
		blind    bool
		broken   bool
	}{
		{"another process's charge after the slice", 0, now, true, false},
		{"its own process's charge", 2, now, true, true},
		{"a charge before the slice was counted", 0, t0 - 1, true, true},
		{"one process: every charge counts", 0, now, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &modelCeiling{blind: tc.blind}
			c.add(algo.GCRA{Rate: 1, Burst: 5})
			c.limit += 3 // the leasing slack
			h := &modelHistory{}
			h.charged(1, tc.proc, 20, tc.chargeAt)
			h.grants = append(h.grants, modelGrant{step: 2, n: 2, at: now, proc: 2, counted: t0})
			msg := c.check("k", h)
			assert.Equal(t, tc.broken, msg != "", msg)
		})
	}
}
