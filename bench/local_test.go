package bench

import (
	"context"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	slimiter "github.com/sethvargo/go-limiter"
	"github.com/sethvargo/go-limiter/memorystore"
	ulule "github.com/ulule/limiter/v3"
	ulmemory "github.com/ulule/limiter/v3/drivers/store/memory"
	uber "go.uber.org/ratelimit"
	"golang.org/x/time/rate"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/local"
)

// Every local contender gets the same generous limit, so that every call is a grant and
// the figures measure the bookkeeping, not the denials.
const (
	localRate  = 1e9 // permits per second
	localBurst = 1 << 30
)

// tokenBucket is our configuration for the local benchmarks, boxed in the interface once
// (as a caller holding an algo.Algorithm does) so that no call converts it again.
var tokenBucket algo.Algorithm = algo.TokenBucket{Rate: localRate, Burst: localBurst}

// zipfSeed fixes the key sequence so that every run and every contender sees the same keys.
const zipfSeed = 20240601

// seqLen is the length of the pre-drawn key sequence (a power of two, indexed with a mask).
const seqLen = 1 << 20

// keySet is a pre-generated population of keys and a zipf-distributed sequence of draws
// from it, so that no benchmark formats a key or draws a random number while timed.
type keySet struct {
	keys []string
	seq  []int32
}

var (
	keySetsMu sync.Mutex
	keySets   = map[int]*keySet{}
)

// keysFor returns the shared key set of n keys, built once per process.
func keysFor(n int) *keySet {
	keySetsMu.Lock()
	defer keySetsMu.Unlock()
	if ks, ok := keySets[n]; ok {
		return ks
	}
	ks := &keySet{keys: make([]string, n), seq: make([]int32, seqLen)}
	for i := range ks.keys {
		ks.keys[i] = "user:" + strconv.Itoa(i)
	}
	z := rand.NewZipf(rand.New(rand.NewPCG(zipfSeed, uint64(n))), 1.1, 1, uint64(n-1))
	for i := range ks.seq {
		ks.seq[i] = int32(z.Uint64())
	}
	keySets[n] = ks
	return ks
}

// releaseKeySets forgets the key sets built so far: the next keysFor builds its set
// anew. The benchmarks that do not use them call it first (see settleHeap).
func releaseKeySets() {
	keySetsMu.Lock()
	clear(keySets)
	keySetsMu.Unlock()
}

// parallel runs body from g goroutines, splitting b.N calls between them; ns/op is then
// the wall time per call of all goroutines together, like b.RunParallel reports, but with
// exactly g goroutines whatever GOMAXPROCS is.
func parallel(b *testing.B, g int, body func(i int)) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	if g == 1 {
		for i := 0; i < b.N; i++ {
			body(i)
		}
		return
	}
	split(b.N, g, func(_, i int) { body(i) })
}

// split makes calls 0 to n-1 of body from exactly g goroutines, each a contiguous share
// (goroutine w makes its calls in order), and returns when all are made.
func split(n, g int, body func(w, i int)) {
	var wg sync.WaitGroup
	per := n / g
	for w := 0; w < g; w++ {
		start, end := w*per, (w+1)*per
		if w == g-1 {
			end = n
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := start; i < end; i++ {
				body(w, i)
			}
		}()
	}
	wg.Wait()
}

// newLocal returns our in-memory store without its background sweeper (the peers' sweepers
// are set to run rarely too).
func newLocal(b *testing.B) *local.Store {
	s, err := local.New(local.WithSweepInterval(0))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

func newLimiter(b *testing.B, s *local.Store) *limiter.Limiter {
	l, err := limiter.New(s, tokenBucket)
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// BenchmarkLocalSingleKey: one key hammered from 1 and 2 goroutines.
func BenchmarkLocalSingleKey(b *testing.B) {
	ctx := context.Background()
	for _, g := range []int{1, 2} {
		prefix := "g=" + strconv.Itoa(g) + "/"
		b.Run(prefix+"ratekit-allow", func(b *testing.B) {
			l := newLimiter(b, newLocal(b))
			parallel(b, g, func(int) {
				if d, err := l.Allow(ctx, "key"); err != nil || !d.Allowed {
					b.Errorf("Allow = %+v, %v", d, err)
				}
			})
		})
		// Charge (issue 36): the same pipeline and store call as Allow, a request of
		// another kind; it must cost no more.
		b.Run(prefix+"ratekit-charge", func(b *testing.B) {
			l := newLimiter(b, newLocal(b))
			parallel(b, g, func(int) {
				if d, err := l.Charge(ctx, "key", 1); err != nil || !d.Allowed {
					b.Errorf("Charge = %+v, %v", d, err)
				}
			})
		})
		b.Run(prefix+"ratekit-store-apply", func(b *testing.B) {
			s := newLocal(b)
			req := algo.Request{N: 1}
			parallel(b, g, func(int) {
				if d, err := s.Apply(ctx, "key", tokenBucket, req); err != nil || !d.Allowed {
					b.Errorf("Apply = %+v, %v", d, err)
				}
			})
		})
		b.Run(prefix+"x-time-rate", func(b *testing.B) {
			l := rate.NewLimiter(localRate, localBurst)
			parallel(b, g, func(int) {
				if !l.AllowN(time.Now(), 1) {
					b.Error("AllowN denied")
				}
			})
		})
		b.Run(prefix+"uber-ratelimit", func(b *testing.B) {
			l := uber.New(localRate, uber.WithoutSlack)
			parallel(b, g, func(int) { l.Take() })
		})
	}
}

// BenchmarkLocalKeyed: zipf-distributed keys over a population of 1k and 1M keys, every
// key inserted before the timer starts.
func BenchmarkLocalKeyed(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1_000, 1_000_000} {
		ks := keysFor(n)
		prefix := "keys=" + strconv.Itoa(n) + "/"
		key := func(i int) string { return ks.keys[ks.seq[i&(seqLen-1)]] }
		// Each contender is filled once, outside b.Run (which calls its body several times).
		{
			s, err := local.New(local.WithSweepInterval(0))
			if err != nil {
				b.Fatal(err)
			}
			l, err := limiter.New(s, tokenBucket)
			if err != nil {
				b.Fatal(err)
			}
			req := algo.Request{N: 1}
			for _, k := range ks.keys {
				_, _ = s.Apply(ctx, k, tokenBucket, req)
			}
			b.Run(prefix+"ratekit-allow", func(b *testing.B) {
				parallel(b, 1, func(i int) {
					if d, err := l.Allow(ctx, key(i)); err != nil || !d.Allowed {
						b.Errorf("Allow = %+v, %v", d, err)
					}
				})
			})
			b.Run(prefix+"ratekit-store-apply", func(b *testing.B) {
				parallel(b, 1, func(i int) {
					if d, err := s.Apply(ctx, key(i), tokenBucket, req); err != nil || !d.Allowed {
						b.Errorf("Apply = %+v, %v", d, err)
					}
				})
			})
			_ = s.Close()
		}
		{
			// The floor: a bare Go map from key to a heap-allocated counter, no lock, no
			// clock, no arithmetic. Its ratio to the same at 1k keys is what the memory
			// hierarchy alone charges any keyed store for the larger population.
			m := make(map[string]*[3]int64, n)
			for _, k := range ks.keys {
				m[k] = new([3]int64)
			}
			b.Run(prefix+"go-map-floor", func(b *testing.B) {
				parallel(b, 1, func(i int) {
					m[key(i)][0]++
				})
			})
		}
		{
			s := newSethvargo(b)
			for _, k := range ks.keys {
				_, _, _, _, _ = s.Take(ctx, k)
			}
			b.Run(prefix+"sethvargo-memorystore", func(b *testing.B) {
				parallel(b, 1, func(i int) {
					if _, _, _, _, err := s.Take(ctx, key(i)); err != nil {
						b.Errorf("Take: %v", err)
					}
				})
			})
			_ = s.Close(ctx)
		}
		{
			l := newUlule()
			for _, k := range ks.keys {
				_, _ = l.Get(ctx, k)
			}
			b.Run(prefix+"ulule-memory", func(b *testing.B) {
				parallel(b, 1, func(i int) {
					if c, err := l.Get(ctx, key(i)); err != nil || c.Reached {
						b.Errorf("Get = %+v, %v", c, err)
					}
				})
			})
		}
	}
}

func newSethvargo(b *testing.B) slimiter.Store {
	s, err := newSethvargoStore()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// newSethvargoStore is sethvargo's memory store with our limit, sweeping rarely.
func newSethvargoStore() (slimiter.Store, error) {
	return memorystore.New(&memorystore.Config{
		Tokens: localBurst, Interval: time.Second, SweepInterval: time.Hour, SweepMinTTL: time.Hour,
	})
}

func newUlule() *ulule.Limiter {
	st := ulmemory.NewStoreWithOptions(ulule.StoreOptions{Prefix: "bench", CleanUpInterval: time.Hour})
	return ulule.New(st, ulule.Rate{Period: time.Hour, Limit: localBurst})
}

// BenchmarkLocalMemory inserts 1M distinct keys into a new store per iteration and reports
// the live heap the store holds afterwards, per key (runtime.MemStats.HeapAlloc once a GC
// frees no more, see settledHeap, minus the same before the store was created); ns/insert
// times the inserts alone. The key strings are allocated beforehand and shared with the
// caller, so they are not counted: the figure is the store's overhead.
func BenchmarkLocalMemory(b *testing.B) {
	const n = 1_000_000
	ctx := context.Background()
	ks := keysFor(n)
	measure := func(b *testing.B, fill func() func()) {
		b.ReportAllocs()
		var perKey float64
		for i := 0; i < b.N; i++ {
			b.StopTimer() // ns/insert times the fill alone
			before := settledHeap()
			b.StartTimer()
			release := fill()
			b.StopTimer()
			after := settledHeap()
			perKey = (float64(after) - float64(before)) / n
			release()
			b.StartTimer()
		}
		b.ReportMetric(perKey, "bytes/key")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/insert")
	}
	b.Run("ratekit-allow", func(b *testing.B) {
		measure(b, func() func() {
			s, _ := local.New(local.WithSweepInterval(0)) // valid options: no error
			l, _ := limiter.New(s, tokenBucket)
			for _, k := range ks.keys {
				_, _ = l.Allow(ctx, k)
			}
			return func() { _ = s.Close() }
		})
	})
	b.Run("sethvargo-memorystore", func(b *testing.B) {
		measure(b, func() func() {
			s := newSethvargo(b)
			for _, k := range ks.keys {
				_, _, _, _, _ = s.Take(ctx, k)
			}
			return func() { _ = s.Close(ctx) }
		})
	})
	b.Run("ulule-memory", func(b *testing.B) {
		measure(b, func() func() {
			l := newUlule()
			for _, k := range ks.keys {
				_, _ = l.Get(ctx, k)
			}
			return func() { runtime.KeepAlive(l) }
		})
	})
}

// settledHeap collects until the live heap stops shrinking and returns it (HeapAlloc).
// One runtime.GC is not enough between two stores: ulule's memory store stops its cleaner
// goroutine from a finalizer, so a store dropped before one GC is still held by that
// goroutine at it and is freed only at a later one. Measured from one GC, ulule's row read
// the previous iteration's store leaving as its own arriving: about 0 bytes per key.
func settledHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	for range 20 {
		prev := m.HeapAlloc
		time.Sleep(5 * time.Millisecond) // lets the finalizers and the goroutines they stop run
		runtime.GC()
		runtime.ReadMemStats(&m)
		if m.HeapAlloc+1<<20 > prev { // less than 1 MiB freed: settled
			break
		}
	}
	return m.HeapAlloc
}

// scaleKeys is how many keys each goroutine of BenchmarkLocalScaling cycles through.
const scaleKeys = 1024

// BenchmarkLocalScaling: g goroutines (1 and 2), each on keys of its own (scaleKeys keys,
// "g<w>:<i>", inserted before the timer starts), so that they share no key and meet only
// where the keys' shards do. ns/op is the wall time per call of all goroutines together:
// the throughput ratio g=2 / g=1 is ns/op(g=1) / ns/op(g=2). x/time/rate gets one
// limiter per key, in a slice per goroutine: no lock is shared at all.
func BenchmarkLocalScaling(b *testing.B) {
	ctx := context.Background()
	keys := make([][]string, 2)
	for w := range keys {
		keys[w] = make([]string, scaleKeys)
		for i := range keys[w] {
			keys[w][i] = "g" + strconv.Itoa(w) + ":" + strconv.Itoa(i)
		}
	}
	// each runs body(w, i) from g goroutines; goroutine w makes calls i = 0, 1, ...
	each := func(b *testing.B, g int, body func(w, i int)) {
		b.Helper()
		b.ReportAllocs()
		b.ResetTimer()
		var wg sync.WaitGroup
		per := b.N / g
		for w := 0; w < g; w++ {
			n := per
			if w == g-1 {
				n = b.N - per*(g-1)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < n; i++ {
					body(w, i)
				}
			}()
		}
		wg.Wait()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	}
	for _, g := range []int{1, 2} {
		prefix := "g=" + strconv.Itoa(g) + "/"
		b.Run(prefix+"ratekit-allow", func(b *testing.B) {
			l := newLimiter(b, newLocal(b))
			for _, ks := range keys {
				for _, k := range ks {
					_, _ = l.Allow(ctx, k)
				}
			}
			each(b, g, func(w, i int) {
				if d, err := l.Allow(ctx, keys[w][i&(scaleKeys-1)]); err != nil || !d.Allowed {
					b.Errorf("Allow = %+v, %v", d, err)
				}
			})
		})
		b.Run(prefix+"x-time-rate", func(b *testing.B) {
			ls := make([][]*rate.Limiter, 2)
			for w := range ls {
				ls[w] = make([]*rate.Limiter, scaleKeys)
				for i := range ls[w] {
					ls[w][i] = rate.NewLimiter(localRate, localBurst)
				}
			}
			each(b, g, func(w, i int) {
				if !ls[w][i&(scaleKeys-1)].AllowN(time.Now(), 1) {
					b.Error("AllowN denied")
				}
			})
		})
		b.Run(prefix+"sethvargo-memorystore", func(b *testing.B) {
			s := newSethvargo(b)
			for _, ks := range keys {
				for _, k := range ks {
					_, _, _, _, _ = s.Take(ctx, k)
				}
			}
			each(b, g, func(w, i int) {
				if _, _, _, _, err := s.Take(ctx, keys[w][i&(scaleKeys-1)]); err != nil {
					b.Errorf("Take: %v", err)
				}
			})
		})
	}
}
