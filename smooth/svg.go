package smooth

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/ratekit/limiter/algo"
)

// WriteWarmupSVG writes, as a standalone SVG image, the warm-up diagram of a limiter made by
// NewWarmingUp(rate, warmup, WithColdFactor(coldFactor)): the interval between permits
// (y) against the stored permits (x). The interval is the stable interval 1/rate up to
// thresholdPermits and rises linearly to coldFactor/rate at maxPermits; the time taken by
// k permits is the area under the line over the k permits spent, so the trapezoid (from
// maxPermits down to the threshold) takes warmup and the rectangle below the threshold
// warmup/2. A coldFactor of 0 means 3. rate must be finite and > 0, warmup ≥ 1 µs, and
// coldFactor in [1, 1e6]; the error wraps algo.ErrInvalidConfig.
func WriteWarmupSVG(w io.Writer, rate float64, warmup time.Duration, coldFactor float64) error {
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
		width, height          = 680.0, 420.0
		left, right, top, base = 135.0, 95.0, 70.0, 340.0 // plot area; base is the x axis
	)
	xOf := func(permits float64) float64 { return left + permits/maxPermits*(width-left-right) }
	yOf := func(interval float64) float64 { return base - interval/(cold*1.15)*(base-top) }
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="sans-serif" font-size="12">`+"\n",
		f(width), f(height), f(width), f(height))
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p(`<text x="%s" y="22" font-size="15" text-anchor="middle">SmoothWarmingUp: interval between permits vs stored permits</text>`+"\n", f(width/2))
	p(`<text x="%s" y="40" fill="#555" text-anchor="middle">rate %s/s, warm-up %v, cold factor %s</text>`+"\n",
		f(width/2), strconv.FormatFloat(rate, 'g', -1, 64), warmup, strconv.FormatFloat(coldFactor, 'g', -1, 64))

	// The two areas: below the threshold (warmup/2) and the trapezoid (warmup).
	x0, xt, xm := xOf(0), xOf(threshold), xOf(maxPermits)
	ys, yc := yOf(stable), yOf(cold)
	p(`<polygon points="%s,%s %s,%s %s,%s %s,%s" fill="#dbe9f6"/>`+"\n", f(x0), f(base), f(x0), f(ys), f(xt), f(ys), f(xt), f(base))
	p(`<polygon points="%s,%s %s,%s %s,%s %s,%s" fill="#fde3c8"/>`+"\n", f(xt), f(base), f(xt), f(ys), f(xm), f(yc), f(xm), f(base))
	p(`<text x="%s" y="%s" text-anchor="middle">area = warm-up / 2</text>`+"\n", f((x0+xt)/2), f((ys+base)/2+4))
	p(`<text x="%s" y="%s" text-anchor="middle">area = warm-up</text>`+"\n", f((xt+xm)/2), f((ys+base)/2+4))

	// Axes, with their labels.
	p(`<g stroke="black" stroke-width="1.5"><line x1="%s" y1="%s" x2="%s" y2="%s"/><line x1="%s" y1="%s" x2="%s" y2="%s"/></g>`+"\n",
		f(x0), f(base), f(width-right+15), f(base), f(x0), f(base), f(x0), f(top-10))
	p(`<text x="%s" y="%s" text-anchor="middle">stored permits</text>`+"\n", f((left+width-right)/2), f(base+48))
	p(`<text x="%s" y="%s" transform="rotate(-90 %s %s)" text-anchor="middle">interval between permits</text>`+"\n",
		f(22), f((top+base)/2), f(22), f((top+base)/2))

	// The interval function, and the dashed guides of its corners.
	p(`<polyline points="%s,%s %s,%s %s,%s" fill="none" stroke="#1f5fa8" stroke-width="3"/>`+"\n",
		f(x0), f(ys), f(xt), f(ys), f(xm), f(yc))
	p(`<g stroke="#888" stroke-dasharray="4 3"><line x1="%s" y1="%s" x2="%s" y2="%s"/><line x1="%s" y1="%s" x2="%s" y2="%s"/></g>`+"\n",
		f(x0), f(yc), f(xm), f(yc), f(xm), f(yc), f(xm), f(base))

	ms := func(us float64) string { return strconv.FormatFloat(us/1000, 'g', 4, 64) + " ms" }
	p(`<text x="%s" y="%s" text-anchor="end">stable %s</text>`+"\n", f(x0-6), f(ys+4), ms(stable))
	p(`<text x="%s" y="%s" text-anchor="end">cold %s</text>`+"\n", f(x0-6), f(yc+4), ms(cold))
	permits := func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
	p(`<text x="%s" y="%s" text-anchor="middle">0</text>`+"\n", f(x0), f(base+18))
	p(`<text x="%s" y="%s" text-anchor="middle">thresholdPermits = %s</text>`+"\n", f(xt), f(base+18), permits(threshold))
	p(`<text x="%s" y="%s" text-anchor="middle">maxPermits = %s</text>`+"\n", f(xm), f(base+18), permits(maxPermits))
	p(`<text x="%s" y="%s" fill="#555" font-size="11">unused, the stored permits grow (0 to maxPermits in one warm-up period);</text>`+"\n",
		f(left+10), f(top-8))
	p(`<text x="%s" y="%s" fill="#555" font-size="11">used, they shrink by the permits taken, each waiting the interval above it</text>`+"\n",
		f(left+10), f(top+6))
	p("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}
