package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/local"
)

// At most two exports run at once. A holder that never releases (a crashed process)
// frees its permit when its lease expires; releasing a lease that has expired changes
// nothing and says so.
func ExampleSemaphore() {
	// A fake clock stands still unless moved, so the output is exact; leave out the clock
	// options in production.
	clk := clockx.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	st := local.New(local.WithClock(clk))
	defer st.Close()
	sem, err := limiter.NewSemaphore(st, algo.Semaphore{Permits: 2, LeaseTTL: 30 * time.Second},
		limiter.WithSemaphoreClock(clk))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	first, _ := sem.Acquire(ctx, "exports")
	crashed, _ := sem.Acquire(ctx, "exports")
	_, ok, _ := sem.TryAcquire(ctx, "exports")
	fmt.Println("third export admitted:", ok)

	_ = first.Release(ctx)
	third, ok, _ := sem.TryAcquire(ctx, "exports")
	fmt.Println("after a release, admitted:", ok)

	clk.Add(30 * time.Second) // nobody renewed: both leases expire
	n, _ := sem.Holders(ctx, "exports")
	fmt.Println("holders after LeaseTTL:", n)
	err = crashed.Release(ctx)
	fmt.Println("late release reports expiry:", errors.Is(err, limiter.ErrLeaseExpired))
	_ = third.Release(ctx)

	// Output:
	// third export admitted: false
	// after a release, admitted: true
	// holders after LeaseTTL: 0
	// late release reports expiry: true
}

// A fleet-wide limit of 100 in-flight calls to a payment provider, shared through Redis.
// The holder keeps its lease alive while it works and stops if the lease is lost (for
// example when Redis restarted without persistence and forgot it).
func ExampleLease_KeepAlive() {
	client := redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true})
	defer client.Close()
	sem, err := limiter.NewSemaphore(distributed.New(client),
		algo.Semaphore{Permits: 100, LeaseTTL: 10 * time.Second, Fair: true})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lease, err := sem.Acquire(ctx, "payments") // waits in arrival order, up to 5 s
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = lease.Release(context.Background()) }()

	work, stop := context.WithCancel(context.Background())
	defer stop()
	lost := lease.KeepAlive(work)
	go func() {
		if err := <-lost; errors.Is(err, limiter.ErrLeaseExpired) {
			stop() // the permit may be someone else's now: abandon the call
		}
	}()
	callPaymentProvider(work)
}

func callPaymentProvider(context.Context) {}

// The Semaphore's clock only paces the polls of a blocked Acquire; the store's clock
// decides when leases expire. Sharing one fake clock makes a blocked Acquire return at the
// exact instant the holder's lease runs out.
func ExampleSemaphore_Acquire() {
	clk := clockx.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	st := local.New(local.WithClock(clk))
	defer st.Close()
	sem, _ := limiter.NewSemaphore(st, algo.Semaphore{Permits: 1, LeaseTTL: 2 * time.Second},
		limiter.WithSemaphoreClock(clk))
	ctx := context.Background()
	start := clk.Now()
	_, _ = sem.Acquire(ctx, "report") // held, never released
	lease, err := sem.Acquire(ctx, "report")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("granted after", clk.Now().Sub(start))
	_ = lease.Release(ctx)
	// Output: granted after 2s
}
