package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/semaphore"
)

// At most two exports run at once. A holder that never releases (a crashed process)
// frees its permit when its lease expires; releasing a lease that has expired changes
// nothing and says so.
func ExampleSemaphore() {
	// A fake clock stands still unless moved, so the output is exact; leave out the clock
	// option in production. The Semaphore takes its clock from the store.
	clk := clockx.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	st, err := local.New(local.WithClock(clk))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	sem, err := semaphore.New(st, algo.Semaphore{Permits: 2, LeaseTTL: 30 * time.Second})
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
	n, _ := st.Holders(ctx, "exports")
	fmt.Println("holders after LeaseTTL:", n)
	err = crashed.Release(ctx)
	fmt.Println("late release reports expiry:", errors.Is(err, semaphore.ErrLeaseExpired))
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
	st, err := distributed.New(client)
	if err != nil {
		log.Fatal(err)
	}
	sem, err := semaphore.New(st, algo.Semaphore{Permits: 100, LeaseTTL: 10 * time.Second, Fair: true})
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
		if err := <-lost; errors.Is(err, semaphore.ErrLeaseExpired) {
			stop() // the permit may be someone else's now: abandon the call
		}
	}()
	callPaymentProvider(work)
}

func callPaymentProvider(context.Context) {}

// The Semaphore's clock only paces the polls of a blocked Acquire; the store's clock
// decides when leases expire. By default the Semaphore sleeps on the store's clock, so with
// a fake clock a blocked Acquire returns at the exact instant the holder's lease runs out.
func ExampleSemaphore_Acquire() {
	clk := clockx.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	st, err := local.New(local.WithClock(clk))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	sem, _ := semaphore.New(st, algo.Semaphore{Permits: 1, LeaseTTL: 2 * time.Second})
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

// WithPoll caps the wait between two attempts of a blocked Acquire: a shorter cap notices
// a release sooner, for more calls to the store. WithClock sets the clock those waits run
// on when it is not the store's, here a fake one that records them.
func ExampleWithPoll() {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st, err := local.New(local.WithClock(clockx.NewFake(start))) // leases never expire: time stands still
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	waits := &recordingSleeps{Fake: clockx.NewFake(start)}
	sem, _ := semaphore.New(st, algo.Semaphore{Permits: 1, LeaseTTL: time.Minute},
		semaphore.WithPoll(8*time.Millisecond), semaphore.WithClock(waits))
	ctx := context.Background()
	_, _ = sem.Acquire(ctx, "report") // held, never released
	ctx, cancel := context.WithCancel(ctx)
	waits.after, waits.cancel = 6, cancel // give up after six waits
	_, err = sem.Acquire(ctx, "report")
	fmt.Println(waits.slept, err)
	// Output: [1ms 2ms 4ms 8ms 8ms 8ms] context canceled
}

// recordingSleeps is a fake clock that records its sleeps and cancels a context after a
// number of them.
type recordingSleeps struct {
	*clockx.Fake
	slept  []time.Duration
	after  int
	cancel context.CancelFunc
}

func (c *recordingSleeps) Sleep(ctx context.Context, d time.Duration) error {
	c.slept = append(c.slept, d)
	if len(c.slept) == c.after {
		c.cancel()
	}
	return c.Fake.Sleep(ctx, d)
}
