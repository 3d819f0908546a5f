package adaptive

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
)

// Outcome is how a request ended, as told to Token.Done.
type Outcome int

const (
	// Success: the request was served. Its latency is a sample, whatever the response.
	Success Outcome = iota
	// Timeout: the request took too long (a deadline passed). A drop.
	Timeout
	// Overload: something downstream refused the request as overloaded (a 503, a full
	// queue). A drop.
	Overload
	// Ignore: the request tells nothing about the service (the client went away, the
	// request was invalid): it leaves the in-flight count but is not a sample.
	Ignore
)

// String returns the outcome's name.
func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Timeout:
		return "timeout"
	case Overload:
		return "overload"
	case Ignore:
		return "ignore"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Limiter is a concurrency limiter whose limit moves with what it observes. TryAcquire
// admits a request while fewer than the limit are in flight; the request's Token.Done
// reports how it ended and how long it took (on the limiter's clock), and the Algorithm
// moves the limit from these samples. A Limiter is safe for concurrent use.
type Limiter struct {
	clock     clockx.Clock
	load      func() float64
	threshold float64

	mu       sync.Mutex
	est      estimator
	limit    int
	inFlight int
	capacity capacityWindow // of the load shedder
	// onAdmit, when set (tests), is called under the lock after each admission.
	onAdmit func(inFlight, limit int)
}

// New returns a Limiter whose limit a moves, starting at a's initial limit. It returns an
// error wrapping algo.ErrInvalidConfig, naming the field, when a or an option is invalid.
func New(a Algorithm, opts ...Option) (*Limiter, error) {
	if a == nil {
		return nil, fmt.Errorf("%w: adaptive.New: the Algorithm is nil", algo.ErrInvalidConfig)
	}
	if err := a.validate(); err != nil {
		return nil, err
	}
	l := &Limiter{clock: clockx.Real()}
	for _, o := range opts {
		if o != nil {
			o.apply(l)
		}
	}
	if l.load != nil && !(l.threshold > 0) {
		return nil, fmt.Errorf("%w: adaptive.WithLoadShedding: threshold must be > 0, got %v", algo.ErrInvalidConfig, l.threshold)
	}
	l.est = a.newEstimator()
	l.limit = max(l.est.Limit(), 1)
	return l, nil
}

// Option configures a Limiter.
type Option interface {
	apply(*Limiter)
}

type optionFunc func(*Limiter)

func (f optionFunc) apply(l *Limiter) { f(l) }

// WithClock sets the clock that measures latencies; default clockx.Real(). Tests and
// simulations use a clockx.Fake. A nil c keeps the default.
func WithClock(c clockx.Clock) Option {
	return optionFunc(func(l *Limiter) {
		if c != nil {
			l.clock = c
		}
	})
}

// WithLoadShedding adds a load shedder in the spirit of Sentinel's BBR system protection:
// while load reports a load at or above threshold (0 is idle, 1 is saturated: SystemLoad,
// SchedulerLoad, or a func of your own; tests pass a constant), a request is also shed
// when the requests in flight already reach the capacity the limiter estimates from its
// own samples: the most successes completed in one second over the last ten seconds,
// times the lowest latency seen in them (Little's law: the concurrency the service
// sustains without queueing). Before a full second of samples nothing is shed. load is
// called on every TryAcquire, so it must be cheap and safe for concurrent use (SystemLoad
// caches its reading). By default there is no shedder; a nil load removes it. A threshold
// that is not > 0 (with a load) makes New return an error wrapping algo.ErrInvalidConfig.
func WithLoadShedding(load func() float64, threshold float64) Option {
	return optionFunc(func(l *Limiter) {
		l.load, l.threshold = load, threshold
	})
}

// Limit returns the current limit.
func (l *Limiter) Limit() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limit
}

// InFlight returns the number of requests admitted and not yet done.
func (l *Limiter) InFlight() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inFlight
}

// TryAcquire admits a request or sheds it at once; it never waits, like
// semaphore.Semaphore.TryAcquire. It returns a Token and true when fewer than the limit
// are in flight (and the load shedder, if any, lets the request through); nil and false,
// with a nil error, when the request is shed: a shed request is a result, not an error
// (answer 503, or queue the work elsewhere, and let the client retry later). A ctx already
// done returns (nil, false, ctx.Err()) and takes nothing. Every Token must be given back
// with Token.Done.
func (l *Limiter) TryAcquire(ctx context.Context) (*Token, bool, error) {
	tok, _, err := l.acquire(ctx)
	return tok, tok != nil, err
}

// shed is why acquire refused a request (tests tell the two gates apart).
type shed int

const (
	admitted     shed = iota
	limitReached      // as many in flight as the limit allows
	overloaded        // the load shedder found the process overloaded
)

func (l *Limiter) acquire(ctx context.Context) (*Token, shed, error) {
	if err := ctx.Err(); err != nil {
		return nil, admitted, err
	}
	shedding := false
	if l.load != nil {
		// Read outside the lock: a source may do I/O now and then.
		shedding = l.load() >= l.threshold
	}
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight >= l.limit {
		return nil, limitReached, nil
	}
	if shedding && l.inFlight >= 1 && l.inFlight >= l.capacity.estimate(now) {
		return nil, overloaded, nil
	}
	l.inFlight++
	if l.onAdmit != nil {
		l.onAdmit(l.inFlight, l.limit)
	}
	return &Token{l: l, start: now, inFlight: l.inFlight}, admitted, nil
}

// Token is one admitted request. Call Done exactly once when it ends; later calls do
// nothing. Done on a nil Token does nothing, so a Token from a refused TryAcquire may be
// released unconditionally.
type Token struct {
	l        *Limiter
	start    time.Time
	inFlight int
	done     atomic.Bool
}

// Done releases the request's place and reports its outcome; its latency is the time
// since TryAcquire on the limiter's clock. Outcomes other than Ignore move the limit.
func (t *Token) Done(o Outcome) {
	if t == nil || t.done.Swap(true) {
		return
	}
	l := t.l
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inFlight--
	if o == Ignore {
		return
	}
	s := sample{Start: t.start, Latency: max(now.Sub(t.start), 0), InFlight: t.inFlight,
		Dropped: o == Timeout || o == Overload}
	l.limit = max(l.est.Update(s), 1)
	if l.load != nil && !s.Dropped {
		l.capacity.record(now, s.Latency)
	}
}

// capacityWindow estimates the concurrency a service sustains without queueing, from the
// successes of the last capacityBuckets seconds: the most per second times the lowest
// latency. The zero value is empty.
type capacityWindow struct {
	buckets [capacityBuckets]capacityBucket
}

const (
	capacityBuckets = 10
	capacityWidth   = time.Second
)

type capacityBucket struct {
	index int64 // second since the epoch; 0 = unused
	count int
	minRT time.Duration
}

func bucketIndex(t time.Time) int64 { return t.UnixNano()/int64(capacityWidth) + 1 }

func (w *capacityWindow) record(now time.Time, latency time.Duration) {
	i := bucketIndex(now)
	b := &w.buckets[(i%capacityBuckets+capacityBuckets)%capacityBuckets]
	if b.index != i {
		*b = capacityBucket{index: i, minRT: latency}
	}
	b.count++
	b.minRT = min(b.minRT, latency)
}

// estimate returns the estimated capacity at now, math.MaxInt while there is no complete
// second of samples.
func (w *capacityWindow) estimate(now time.Time) int {
	cur := bucketIndex(now)
	maxCount := 0
	minRT := time.Duration(math.MaxInt64)
	for _, b := range w.buckets {
		if b.index == 0 || b.index <= cur-capacityBuckets || b.index > cur {
			continue
		}
		minRT = min(minRT, b.minRT)
		if b.index < cur { // the current second is not over
			maxCount = max(maxCount, b.count)
		}
	}
	if maxCount == 0 {
		return math.MaxInt
	}
	perSecond := float64(maxCount) / capacityWidth.Seconds()
	return max(1, int(math.Ceil(perSecond*minRT.Seconds())))
}
