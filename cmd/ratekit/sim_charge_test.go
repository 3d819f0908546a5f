package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/sim"
)

// TestSimCharge: --charge records usage on top of the traffic: a charged column, the
// admitted count dropping to 0 while the key pays its debt and coming back, and '^' under
// the chart where the charges were.
func TestSimCharge(t *testing.T) {
	t.Parallel()
	code, out, errOut := runCLI(t, "sim", "--algo", "token-bucket", "--rate", "10", "--traffic", "steady",
		"--duration", "8s", "--charge", "n=50,at=2s")
	require.Equal(t, 0, code, errOut)
	// Steady 15/s empties the bucket by 1 s; the charge at 2 s leaves it 50 in debt, paid
	// back at 10/s by 7 s.
	assert.Equal(t, `token-bucket(rate=10/s, burst=10), steady traffic at base rate 10/s for 8s, allow mode, charge 50 at 2s
    time  offered admitted  delayed   denied  charged
      0s       15       15        0        0        0
      1s       15       14        0        1        0
      2s       15        0        0       15       50
      3s       15        0        0       15        0
      4s       15        0        0       15        0
      5s       15        0        0       15        0
      6s       15        0        0       15        0
      7s       15       10        0        5        0
   total      120       39        0       81       50
`, table(out))
	assert.Contains(t, out, "\n      0 +------------------------\n               ^^^\n        0s                     8s\n        . offered   # admitted   ^ charged\n")
}

// TestSimChargeCompare: compared algorithms get the same charges, in a column of their
// own. (printCompare itself: of the simulator's algorithms only token-bucket can be
// charged so far.)
func TestSimChargeCompare(t *testing.T) {
	t.Parallel()
	rows := []sim.Interval{{Offered: 30, Admitted: 5, Charged: 5}, {Start: time.Second}}
	var b strings.Builder
	printCompare(&b, "title", []simRun{
		{name: "token-bucket", a: algo.TokenBucket{Rate: 10, Burst: 10}, rows: rows},
		{name: "other", a: algo.TokenBucket{Rate: 10, Burst: 20}, rows: rows},
	}, false, true)
	assert.Contains(t, b.String(), `    time  offered  charged token-bucket    other
      0s       30        5            5        5
      1s        0        0            0        0
   total       30        5            5        5
`)
}

func TestSimChargeSVG(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "chart.svg")
	code, _, errOut := runCLI(t, "sim", "--algo", "token-bucket", "--duration", "4s", "--charge", "n=20,every=2s", "--svg", path)
	require.Equal(t, 0, code, errOut)
	doc := parseSVG(t, path)
	var names []string
	for _, p := range doc.Paths {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{"offered", "admitted", "charged"}, names)
	assert.Contains(t, doc.Texts, "charged per 1s")
}

func TestSimChargeErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		charge, want string
	}{
		{"50", "want n=N[,every=D][,at=D]"},
		{"n=0", "n must be in [1, 2^53]"},
		{"n=5,every=often", "every=often is not a number or a duration"},
		{"n=5,at=9s", "the first charge, at 9s, is outside the run"},
	} {
		args := []string{"sim", "--duration", "5s", "--charge", tc.charge}
		code, out, errOut := runCLI(t, args...)
		checkOneLine(t, args, code, out, errOut, exitUsage, tc.want)
		assert.Equal(t, 1, strings.Count(errOut, "sim: "), errOut)
	}
}
