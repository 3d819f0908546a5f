package sim

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratekit/limiter/algo"
)

// TestRunChargeDebtAndRecovery: a charge of 30 on a bucket of 10 that the burst emptied
// leaves it 30 in debt, 3 s of refill, then the next burst finds what refilled since.
func TestRunChargeDebtAndRecovery(t *testing.T) {
	t.Parallel()
	rows, err := Run(Config{
		Algorithm: algo.TokenBucket{Rate: 10, Burst: 10},
		Traffic:   Burst, Base: 10, Duration: 8 * time.Second,
		Charge: Charge{N: 30, At: time.Second, Every: 4 * time.Second},
	})
	require.NoError(t, err)
	checkRows(t, rows, []Interval{
		{Start: 0, Offered: 30, Admitted: 10},
		{Start: time.Second, Charged: 30}, // 10 refilled by 1 s: 20 in debt after it
		{Start: 2 * time.Second, Offered: 30},
		{Start: 3 * time.Second},
		{Start: 4 * time.Second, Offered: 30, Admitted: 10}, // 20 paid back by 3 s, full by 4 s
		{Start: 5 * time.Second, Charged: 30},
		{Start: 6 * time.Second, Offered: 30},
		{Start: 7 * time.Second},
	})
	assert.Equal(t, int64(60), Sum(rows).Charged)
}

// TestRunChargeBeforeArrivals: a charge at the instant of arrivals is recorded first.
func TestRunChargeBeforeArrivals(t *testing.T) {
	t.Parallel()
	rows, err := Run(Config{
		Algorithm: algo.TokenBucket{Rate: 10, Burst: 30},
		Traffic:   Burst, Base: 10, Duration: 2 * time.Second,
		Charge: Charge{N: 25},
	})
	require.NoError(t, err)
	assert.Equal(t, 5, rows[0].Admitted, "30 − 25 charged first")
	assert.Equal(t, int64(25), rows[0].Charged)
}

func TestParseCharge(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want Charge
		str  string
	}{
		{"n=50", Charge{N: 50}, "charge 50 at 0s"},
		{"n=50,every=10s", Charge{N: 50, Every: 10 * time.Second}, "charge 50 every 10s from 0s"},
		{"at=2s, every=500ms, n=7", Charge{N: 7, At: 2 * time.Second, Every: 500 * time.Millisecond}, "charge 7 every 500ms from 2s"},
	} {
		c, err := ParseCharge(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, c, tc.in)
		assert.Equal(t, tc.str, c.String(), tc.in)
	}
	for _, in := range []string{"", "50", "every=1s", "n=0", "n=-1", "n=9007199254740993", "n=5,n=6", "n=5,size=3", "n=5,every=soon"} {
		_, err := ParseCharge(in)
		assert.Error(t, err, in)
	}
}

// uncharged is an algorithm that does not state algo.Chargeable.
type uncharged struct{ algo.Algorithm }

func (uncharged) Capabilities() algo.Capability { return 0 }

func TestRunRejectsBadCharge(t *testing.T) {
	t.Parallel()
	tb := algo.TokenBucket{Rate: 10, Burst: 10}
	for _, tc := range []struct {
		a    algo.Algorithm
		c    Charge
		want string
	}{
		{tb, Charge{N: -1}, "[1, 2^53]"},
		{tb, Charge{N: 1, At: 5 * time.Second}, "outside the run"},
		{tb, Charge{N: 1, At: -time.Second}, "outside the run"},
		{tb, Charge{N: 1, Every: -time.Second}, "≥ 0 apart"},
		{tb, Charge{N: 1, Every: time.Nanosecond}, "more than"},
		{uncharged{tb}, Charge{N: 1}, "cannot be charged"},
	} {
		_, err := Run(Config{Algorithm: tc.a, Traffic: Steady, Base: 10, Duration: 5 * time.Second, Charge: tc.c})
		require.ErrorIs(t, err, ErrConfig, "%+v", tc.c)
		assert.Contains(t, err.Error(), tc.want)
	}
}

// TestChartCharged: the charges are a Separate series, marked under the ASCII chart's
// axis and drawn in a panel of their own in the SVG, and they do not set the scale.
func TestChartCharged(t *testing.T) {
	t.Parallel()
	rows := []Interval{{Offered: 4, Admitted: 4}, {Offered: 4, Charged: 100}, {Offered: 4, Admitted: 2}}
	c, err := NewChart("t", "", time.Second, []string{"token-bucket"}, [][]Interval{rows})
	require.NoError(t, err)
	require.Len(t, c.Series, 3)
	assert.Equal(t, Series{Name: "charged", Values: []float64{0, 100, 0}, Separate: true}, c.Series[2])

	var b bytes.Buffer
	require.NoError(t, c.WriteASCII(&b, 6, 2))
	assert.Equal(t, `requests per 1s
      4 |##....
      2 |##..##
      0 +------
           ^^
        0s   3s
        . offered   # admitted   ^ charged
`, b.String())

	b.Reset()
	require.NoError(t, c.WriteSVG(&b))
	assert.Contains(t, b.String(), `data-name="charged"`)
	assert.Contains(t, b.String(), "charged per 1s")
	assert.Equal(t, 1, strings.Count(b.String(), `data-name="charged"`))

	// No charge, no series.
	c, err = NewChart("t", "", time.Second, []string{"a"}, [][]Interval{rows[:1]})
	require.NoError(t, err)
	assert.Len(t, c.Series, 2)
}
