package sim_test

import (
	"fmt"
	"os"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/sim"
)

// A token bucket of 20 facing bursts of 30 every other second admits 20 of each.
func ExampleRun() {
	rows, err := sim.Run(sim.Config{
		Algorithm: algo.TokenBucket{Rate: 10, Burst: 20},
		Traffic:   sim.Burst,
		Base:      10,
		Duration:  4 * time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range rows {
		fmt.Printf("%v: offered %d, admitted %d, denied %d\n", r.Start, r.Offered, r.Admitted, r.Denied())
	}
	// Output:
	// 0s: offered 30, admitted 20, denied 10
	// 1s: offered 0, admitted 0, denied 0
	// 2s: offered 30, admitted 20, denied 10
	// 3s: offered 0, admitted 0, denied 0
}

// In wait mode a request is granted if the algorithm can serve it within MaxWait.
func ExampleRun_wait() {
	rows, _ := sim.Run(sim.Config{
		Algorithm: algo.LeakyBucket{Rate: 10, Capacity: 10},
		Traffic:   sim.Burst,
		Base:      10,
		Duration:  2 * time.Second,
		MaxWait:   2 * time.Second,
	})
	t := sim.Sum(rows)
	fmt.Printf("admitted %d of %d, %d after a wait: mean %v, longest %v\n",
		t.Admitted, t.Offered, t.Delayed, t.MeanDelay(), t.MaxDelay)
	// Output:
	// admitted 10 of 30, 9 after a wait: mean 500ms, longest 900ms
}

// The chart of a simulation, drawn as text.
func ExampleChart_WriteASCII() {
	rows, _ := sim.Run(sim.Config{
		Algorithm: algo.FixedWindow{Limit: 10, Window: time.Second},
		Traffic:   sim.Spike,
		Base:      10,
		Duration:  10 * time.Second,
	})
	c, _ := sim.NewChart("", "", time.Second, []string{"fixed-window"}, [][]sim.Interval{rows})
	_ = c.WriteASCII(os.Stdout, 30, 5)
	// Output:
	// requests per 1s
	//      28 |            ......
	//         |            ......
	//         |            ......
	//    11.2 |            ######
	//         |##############################
	//       0 +------------------------------
	//         0s                          10s
	//         . offered   # admitted
}
