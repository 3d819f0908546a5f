package storetest

import (
	"github.com/ratekit/limiter/algo"
)

// bucketSteps is the table shared by TokenBucket{10, 5} and GCRA{10, 5}: a GCRA admits
// exactly what a token bucket with the same rate and burst admits, and with an emission
// interval of a whole 100ms their reports agree to the microsecond.
func bucketSteps() []step {
	return []step{
		0:  ask(0, 5, 0, ok(0, 500*ms, 0)), // a fresh key is full
		1:  ask(0, 1, 0, deny(0, 100*ms, 500*ms)),
		2:  ask(50*ms, 1, 0, deny(0, 50*ms, 450*ms)), // half a token after 50ms
		3:  ask(100*ms, 1, 0, ok(0, 500*ms, 0)),
		4:  ask(100*ms, 6, 0, deny(0, never, 500*ms)), // N > Burst
		5:  ask(100*ms, 6, forever, deny(0, never, 500*ms)),
		6:  ask(100*ms, 2, 200*ms, ok(0, 700*ms, 200*ms)), // reserves: 2 tokens of debt
		7:  ask(100*ms, 1, 0, deny(0, 300*ms, 700*ms)),    // queues behind the debt
		8:  ask(100*ms, 1, 300*ms, ok(0, 800*ms, 300*ms)), // MaxWait exactly the wait
		9:  giveBack(200*ms, 3, 8),                        // -2 + 3 = 1 token
		10: ask(200*ms, 1, 0, ok(0, 500*ms, 0)),           // the refunded token
		11: ask(350*ms, 1, 0, ok(0, 450*ms, 0)),           // 1.5 tokens refilled
		12: ask(10*sec, 3, 0, ok(2, 300*ms, 0)),           // idle: full, not more
		13: giveBack(10*sec, 10, 12),                      // never above Burst
		14: ask(10*sec, 5, 0, ok(0, 500*ms, 0)),
		15: ask(10*sec, 1, 0, deny(0, 100*ms, 500*ms)),
	}
}

// bucketScenarios are the tables of TokenBucket, GCRA and LeakyBucket. Origin is epoch.
func bucketScenarios() []scenario {
	return []scenario{
		{name: "TokenBucket/basic", alg: algo.TokenBucket{Rate: 10, Burst: 5}, steps: bucketSteps()},
		{name: "GCRA/basic", alg: algo.GCRA{Rate: 10, Burst: 5}, steps: bucketSteps()},
		// Rate 3: one token takes 333333.3µs, rounded up to whole µs (never early).
		{name: "TokenBucket/fractional", alg: algo.TokenBucket{Rate: 3, Burst: 1}, steps: []step{
			ask(0, 1, 0, ok(0, 333334*us, 0)),
			ask(0, 1, 0, deny(0, 333334*us, 333334*us)),
			ask(333333*us, 1, 0, deny(0, us, us)),
			ask(333334*us, 1, 0, ok(0, 333334*us, 0)), // full at 333334µs (capped at 1)
		}},
		{name: "GCRA/fractional", alg: algo.GCRA{Rate: 3, Burst: 1}, steps: []step{
			ask(0, 1, 0, ok(0, 333334*us, 0)),
			ask(0, 1, 0, deny(0, 333334*us, 333334*us)),
			ask(333333*us, 1, 0, deny(0, us, us)),
			// The TAT (333333.3µs) is past, so it restarts from now: now + T.
			ask(333334*us, 1, 0, ok(0, 333334*us, 0)),
		}},
		{name: "TokenBucket/slow", alg: algo.TokenBucket{Rate: 0.5, Burst: 2}, steps: []step{
			ask(0, 2, 0, ok(0, 4*sec, 0)),
			ask(sec, 1, 0, deny(0, sec, 3*sec)),
			ask(2*sec, 1, 0, ok(0, 4*sec, 0)),
			ask(2*sec, 1, forever, ok(0, 6*sec, 2*sec)),
			ask(2*sec, 1, forever, ok(0, 8*sec, 4*sec)), // spaced by 1/Rate = 2s
		}},
		{name: "GCRA/slow", alg: algo.GCRA{Rate: 0.5, Burst: 2}, steps: []step{
			ask(0, 2, 0, ok(0, 4*sec, 0)),
			ask(sec, 1, 0, deny(0, sec, 3*sec)),
			ask(2*sec, 1, 0, ok(0, 4*sec, 0)),
			ask(2*sec, 1, forever, ok(0, 6*sec, 2*sec)),
			ask(2*sec, 1, forever, ok(0, 8*sec, 4*sec)),
		}},
		{name: "LeakyBucket/meter-and-queue", alg: algo.LeakyBucket{Rate: 10, Capacity: 5}, steps: []step{
			0:  ask(0, 5, 0, ok(0, 500*ms, 0)), // meter: a fresh key is empty, 5 fit
			1:  ask(0, 1, 0, deny(0, 100*ms, 500*ms)),
			2:  ask(50*ms, 1, 0, deny(0, 50*ms, 450*ms)),
			3:  ask(100*ms, 1, 0, ok(0, 500*ms, 0)),
			4:  ask(100*ms, 6, 0, deny(0, never, 500*ms)), // N > Capacity
			5:  ask(100*ms, 6, forever, deny(0, never, 500*ms)),
			6:  ask(sec, 1, sec, ok(4, 100*ms, 0)), // queue: empty, goes at once
			7:  ask(sec, 1, sec, ok(3, 200*ms, 100*ms)),
			8:  ask(sec, 2, sec, ok(1, 400*ms, 200*ms)),
			9:  ask(sec, 2, forever, deny(1, 100*ms, 400*ms)), // a full queue is a denial
			10: ask(sec, 1, 300*ms, deny(1, 100*ms, 400*ms)),  // would wait 400ms
			11: ask(sec, 1, 400*ms, ok(0, 500*ms, 400*ms)),
			12: giveBack(1200*ms, 2, 11), // level 3 → 1
			13: ask(1200*ms, 1, forever, ok(3, 200*ms, 100*ms)),
			14: ask(1200*ms, 1, 0, ok(2, 300*ms, 0)), // the meter only asks that N fits now
		}},
		{name: "LeakyBucket/slow-queue", alg: algo.LeakyBucket{Rate: 0.5, Capacity: 2}, steps: []step{
			ask(0, 1, forever, ok(1, 2*sec, 0)),
			ask(0, 1, forever, ok(0, 4*sec, 2*sec)),
			ask(0, 1, forever, deny(0, 2*sec, 4*sec)),
			ask(2*sec, 1, forever, ok(0, 4*sec, 2*sec)), // spaced by N/Rate = 2s
		}},
	}
}

// retryWithMaxWaitScenarios check that the RetryAfter of a request denied because its
// MaxWait was too short is, as algo.Decision documents, "how long until the same request
// would be granted (with its MaxWait)": the wait it needed minus its MaxWait. Each table
// then asks again exactly RetryAfter later and is granted with Wait == MaxWait.
func retryWithMaxWaitScenarios() []scenario {
	return []scenario{
		{name: "RetryWithMaxWait/TokenBucket", alg: algo.TokenBucket{Rate: 10, Burst: 5}, steps: []step{
			ask(0, 5, 0, ok(0, 500*ms, 0)),
			ask(0, 2, 100*ms, deny(0, 100*ms, 500*ms)), // needs 200ms
			ask(100*ms, 2, 100*ms, ok(0, 600*ms, 100*ms)),
		}},
		{name: "RetryWithMaxWait/GCRA", alg: algo.GCRA{Rate: 10, Burst: 5}, steps: []step{
			ask(0, 5, 0, ok(0, 500*ms, 0)),
			ask(0, 2, 100*ms, deny(0, 100*ms, 500*ms)),
			ask(100*ms, 2, 100*ms, ok(0, 600*ms, 100*ms)),
		}},
		{name: "RetryWithMaxWait/FixedWindow", alg: algo.FixedWindow{Limit: 3, Window: sec}, steps: []step{
			ask(700*ms, 3, 0, ok(0, 300*ms, 0)),
			ask(700*ms, 1, 100*ms, deny(0, 200*ms, 300*ms)), // needs 300ms
			ask(900*ms, 1, 100*ms, ok(0, 1100*ms, 100*ms)),
		}},
		{name: "RetryWithMaxWait/SlidingWindowLog", alg: algo.SlidingWindowLog{Limit: 3, Window: sec}, steps: []step{
			ask(0, 3, 0, ok(0, sec, 0)),
			ask(500*ms, 1, 100*ms, deny(0, 400*ms, 500*ms)), // needs 500ms
			ask(900*ms, 1, 100*ms, ok(0, 1100*ms, 100*ms)),
		}},
		{name: "RetryWithMaxWait/SlidingWindowCounter", alg: algo.SlidingWindowCounter{Limit: 10, Window: sec}, steps: []step{
			ask(500*ms, 10, 0, ok(0, 1500*ms, 0)),
			ask(900*ms, 1, 100*ms, deny(0, 100*ms, 1100*ms)), // needs 200ms (1100ms)
			ask(sec, 1, 100*ms, ok(0, 2*sec, 100*ms)),
		}},
		{name: "RetryWithMaxWait/LeakyBucket", alg: algo.LeakyBucket{Rate: 10, Capacity: 5}, steps: []step{
			ask(0, 3, forever, ok(2, 300*ms, 0)),
			ask(0, 1, 100*ms, deny(2, 200*ms, 300*ms)), // needs 300ms
			ask(200*ms, 1, 100*ms, ok(3, 200*ms, 100*ms)),
		}},
	}
}

// refundedTailScenarios refund a whole reservation made into a later window. The state
// then holds an empty future window, which still makes requests queue behind it, so it is
// not fresh: ResetAfter must run until that window starts ("how long until the key's state
// is back to that of a fresh key"), or a store that expires the key at ResetAfter forgets
// the grants of the current window and admits past the limit.
func refundedTailScenarios() []scenario {
	return []scenario{
		{name: "RefundedTail/FixedWindow", alg: algo.FixedWindow{Limit: 2, Window: sec}, steps: []step{
			0: ask(0, 2, 0, ok(0, sec, 0)),
			1: ask(100*ms, 1, forever, ok(0, 1900*ms, 900*ms)), // window 1
			2: giveBack(100*ms, 1, 1),
			3: ask(100*ms, 1, 0, deny(0, 900*ms, 900*ms)), // window 0 still holds 2
		}},
		{name: "RefundedTail/SlidingWindowCounter", alg: algo.SlidingWindowCounter{Limit: 2, Window: sec}, steps: []step{
			0: ask(0, 2, 0, ok(0, 2*sec, 0)),
			1: ask(100*ms, 2, forever, ok(0, 3900*ms, 1900*ms)), // window 2: window 1 never fits 2
			2: giveBack(100*ms, 2, 1),
			3: ask(100*ms, 1, 0, deny(0, 1900*ms, 1900*ms)),
		}},
	}
}
