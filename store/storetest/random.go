package storetest

import (
	"math/rand"
	"time"

	"github.com/ratekit/limiter/algo"
)

// gen draws random requests and time steps shaped to one algorithm: N around its limit,
// MaxWait and time steps around its time scale, so that boundaries are hit often.
type gen struct {
	r     *rand.Rand
	limit int64
	scale time.Duration
	back  bool // time steps may go backwards
}

func newGen(seed int64, a algo.Algorithm, back bool) *gen {
	return &gen{r: rand.New(rand.NewSource(seed)), limit: limitOf(a), scale: scaleOf(a), back: back}
}

// upTo returns a uniform duration in [1µs, d] (1µs when d < 1µs).
func (g *gen) upTo(d time.Duration) time.Duration {
	n := int64(d / time.Microsecond)
	if n < 1 {
		return time.Microsecond
	}
	return time.Duration(1+g.r.Int63n(n)) * time.Microsecond
}

// step returns how far to move the clock: often not at all, often a fraction of the time
// scale, sometimes a microsecond or a few whole scales, and (when back) sometimes backwards.
func (g *gen) step() time.Duration {
	switch p := g.r.Intn(100); {
	case p < 20:
		return 0
	case p < 30:
		return time.Duration(1+g.r.Intn(3)) * time.Microsecond
	case p < 75:
		return g.upTo(g.scale)
	case p < 85:
		return g.upTo(g.scale / 10)
	case p < 92:
		return time.Duration(1+g.r.Intn(3))*g.scale + g.upTo(g.scale) - time.Microsecond
	case p < 95:
		return time.Duration(1+g.r.Intn(2)) * g.scale
	default:
		if g.back {
			return -g.upTo(g.scale)
		}
		return 0
	}
}

// forward returns a step that never goes backwards.
func (g *gen) forward() time.Duration {
	if d := g.step(); d > 0 {
		return d
	}
	return 0
}

// n returns a permit count: mostly small, sometimes the whole limit, sometimes more.
func (g *gen) n() int64 {
	switch p := g.r.Intn(100); {
	case p < 50:
		return 1
	case p < 70:
		return 1 + g.r.Int63n(min(g.limit, 4))
	case p < 87:
		return 1 + g.r.Int63n(g.limit)
	case p < 93:
		return g.limit
	default:
		return g.limit + 1 + g.r.Int63n(3)
	}
}

// small returns a permit count that the algorithm can grant.
func (g *gen) small() int64 {
	if g.r.Intn(4) == 0 {
		return 1 + g.r.Int63n(g.limit)
	}
	return 1 + g.r.Int63n(min(g.limit, 3))
}

// maxWait returns a MaxWait: often 0, sometimes negative (meaning 0), a microsecond or two,
// a random bound around the time scale, or Forever.
func (g *gen) maxWait() time.Duration {
	switch p := g.r.Intn(100); {
	case p < 50:
		return 0
	case p < 54:
		return -g.upTo(g.scale)
	case p < 60:
		return time.Duration(1+g.r.Intn(2)) * time.Microsecond
	case p < 77:
		return g.upTo(2 * g.scale)
	default:
		return algo.Forever
	}
}

// request returns a random request.
func (g *gen) request() algo.Request {
	return algo.Request{N: g.n(), MaxWait: g.maxWait()}
}

// startFor returns a start instant near epoch shifted by a random number of µs below a day,
// so window alignment varies from one seed to the next.
func startFor(seed int64) time.Time {
	r := rand.New(rand.NewSource(seed ^ 0x5eed))
	return epoch.Add(time.Duration(r.Int63n(int64(24*time.Hour/time.Microsecond))) * time.Microsecond)
}
