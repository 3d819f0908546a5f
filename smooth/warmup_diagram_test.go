package smooth

// The warm-up diagram of docs/algorithms.md (docs/smooth-warmup.svg) is drawn here, in a
// test, so that the library carries no code that only the docs use. Regenerate it with
//
//	SMOOTH_UPDATE_SVG=1 go test ./smooth -run TestWarmupDiagramUpToDate

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/chart"
)

// warmupDiagram is the file TestWarmupDiagramUpToDate keeps up to date.
const warmupDiagram = "../docs/smooth-warmup.svg"

// writeWarmupDiagram writes, as a standalone SVG image, the warm-up diagram of a limiter
// made by New(algo.SmoothWarmingUp{Rate: rate, Warmup: warmup, ColdFactor: coldFactor}): the interval between
// permits (y) against the stored permits (x). The interval is the stable interval 1/rate
// up to thresholdPermits and rises linearly to coldFactor/rate at maxPermits; the time
// taken by k permits is the area under the line over the k permits spent, so the trapezoid
// (from maxPermits down to the threshold) takes warmup and the rectangle below the
// threshold warmup/2. A coldFactor of 0 means 3. rate must be finite and > 0, warmup
// ≥ 1 µs, and coldFactor in [1, 1e6]; the error wraps algo.ErrInvalidConfig.
func writeWarmupDiagram(w io.Writer, rate float64, warmup time.Duration, coldFactor float64) error {
	if coldFactor == 0 {
		coldFactor = 3
	}
	cfg := algo.SmoothWarmingUp{Rate: rate, Warmup: warmup, ColdFactor: coldFactor}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if math.IsInf(rate, 1) || warmup < time.Microsecond {
		return fmt.Errorf("%w: smooth: the warm-up diagram needs a finite rate and a warm-up of at least 1µs",
			algo.ErrInvalidConfig)
	}
	// Guava's quantities (see algo.SmoothWarmingUp), in µs.
	wu := float64(warmup / time.Microsecond)
	stable := 1e6 / rate
	cold := stable * coldFactor
	threshold := 0.5 * wu / stable
	maxPermits := threshold + 2.0*wu/(stable+cold)

	const (
		width, height          = 680, 420
		left, right, top, base = 135.0, 95.0, 70.0, 340.0 // plot area; base is the x axis
	)
	xOf := func(permits float64) float64 { return left + permits/maxPermits*(width-left-right) }
	yOf := func(interval float64) float64 { return base - interval/(cold*1.15)*(base-top) }

	d := chart.Doc{Width: width, Height: height, FontSize: 12}
	middle := chart.TextStyle{Anchor: "middle"}
	d.Text(width/2, 22, "SmoothWarmingUp: interval between permits vs stored permits", chart.TextStyle{Size: 15, Anchor: "middle"})
	d.Text(width/2, 40, fmt.Sprintf("rate %s/s, warm-up %v, cold factor %s",
		strconv.FormatFloat(rate, 'g', -1, 64), warmup, strconv.FormatFloat(coldFactor, 'g', -1, 64)),
		chart.TextStyle{Fill: "#555", Anchor: "middle"})

	// The two areas: below the threshold (warmup/2) and the trapezoid (warmup).
	x0, xt, xm := xOf(0), xOf(threshold), xOf(maxPermits)
	ys, yc := yOf(stable), yOf(cold)
	d.Polygon([]chart.Point{{X: x0, Y: base}, {X: x0, Y: ys}, {X: xt, Y: ys}, {X: xt, Y: base}}, "#dbe9f6")
	d.Polygon([]chart.Point{{X: xt, Y: base}, {X: xt, Y: ys}, {X: xm, Y: yc}, {X: xm, Y: base}}, "#fde3c8")
	d.Text((x0+xt)/2, (ys+base)/2+4, "area = warm-up / 2", middle)
	d.Text((xt+xm)/2, (ys+base)/2+4, "area = warm-up", middle)

	// Axes, with their labels.
	d.Group(chart.Attr{Name: "stroke", Value: "black"}, chart.Attr{Name: "stroke-width", Value: "1.5"})
	d.Line(x0, base, width-right+15, base, chart.Stroke{})
	d.Line(x0, base, x0, top-10, chart.Stroke{})
	d.End()
	d.Text((left+width-right)/2, base+48, "stored permits", middle)
	d.Text(22, (top+base)/2, "interval between permits", chart.TextStyle{Anchor: "middle", Vertical: true})

	// The interval function, and the dashed guides of its corners.
	d.Polyline([]chart.Point{{X: x0, Y: ys}, {X: xt, Y: ys}, {X: xm, Y: yc}}, chart.Stroke{Color: "#1f5fa8", Width: 3})
	d.Group(chart.Attr{Name: "stroke", Value: "#888"}, chart.Attr{Name: "stroke-dasharray", Value: "4 3"})
	d.Line(x0, yc, xm, yc, chart.Stroke{})
	d.Line(xm, yc, xm, base, chart.Stroke{})
	d.End()

	ms := func(us float64) string { return strconv.FormatFloat(us/1000, 'g', 4, 64) + " ms" }
	end := chart.TextStyle{Anchor: "end"}
	d.Text(x0-6, ys+4, "stable "+ms(stable), end)
	d.Text(x0-6, yc+4, "cold "+ms(cold), end)
	permits := func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
	d.Text(x0, base+18, "0", middle)
	d.Text(xt, base+18, "thresholdPermits = "+permits(threshold), middle)
	d.Text(xm, base+18, "maxPermits = "+permits(maxPermits), middle)
	note := chart.TextStyle{Size: 11, Fill: "#555"}
	d.Text(left+10, top-8, "unused, the stored permits grow (0 to maxPermits in one warm-up period);", note)
	d.Text(left+10, top+6, "used, they shrink by the permits taken, each waiting the interval above it", note)
	_, err := d.WriteTo(w)
	return err
}

func TestWarmupDiagramUpToDate(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := writeWarmupDiagram(&b, 2, 4*time.Second, 3); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("SMOOTH_UPDATE_SVG") != "" {
		if err := os.WriteFile(warmupDiagram, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", warmupDiagram)
		return
	}
	committed, err := os.ReadFile(warmupDiagram)
	if err != nil {
		t.Fatalf("%v (regenerate with SMOOTH_UPDATE_SVG=1)", err)
	}
	if !bytes.Equal(committed, b.Bytes()) {
		t.Errorf("%s is out of date: regenerate it with SMOOTH_UPDATE_SVG=1 go test ./smooth -run TestWarmupDiagramUpToDate", warmupDiagram)
	}
}

func TestWarmupDiagram(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := writeWarmupDiagram(&b, 5, 4*time.Second, 10); err != nil {
		t.Fatal(err)
	}
	// Well-formed XML, and Guava's quantities for rate 5, warm-up 4 s, cold factor 10:
	// stable 200 ms, cold 2 s, thresholdPermits 10, maxPermits 10 + 8e6/2.2e6 = 13.64.
	d := xml.NewDecoder(bytes.NewReader(b.Bytes()))
	for {
		if _, err := d.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, b.String())
		}
	}
	for _, want := range []string{"stable 200 ms", "cold 2000 ms", "thresholdPermits = 10", "maxPermits = 13.64", "area = warm-up"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the diagram lacks %q", want)
		}
	}
	// The default cold factor is 3.
	var def, three bytes.Buffer
	_ = writeWarmupDiagram(&def, 2, time.Second, 0)
	_ = writeWarmupDiagram(&three, 2, time.Second, 3)
	if !bytes.Equal(def.Bytes(), three.Bytes()) {
		t.Error("cold factor 0 does not draw the default (3)")
	}
	for _, bad := range []struct {
		rate   float64
		warmup time.Duration
		cold   float64
	}{
		{0, time.Second, 3}, {math.NaN(), time.Second, 3}, {math.Inf(1), time.Second, 3},
		{2, 0, 3}, {2, -time.Second, 3}, {2, time.Second, 0.5},
	} {
		if err := writeWarmupDiagram(io.Discard, bad.rate, bad.warmup, bad.cold); !errors.Is(err, algo.ErrInvalidConfig) {
			t.Errorf("writeWarmupDiagram(%v, %v, %v) = %v, want ErrInvalidConfig", bad.rate, bad.warmup, bad.cold, err)
		}
	}
}
