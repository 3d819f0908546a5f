package algo_test

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

// fuzzBytes reads the fuzzer's bytes as numbers, yielding zeros once they run out.
type fuzzBytes []byte

func (b *fuzzBytes) u8() uint8 {
	if len(*b) == 0 {
		return 0
	}
	v := (*b)[0]
	*b = (*b)[1:]
	return v
}

func (b *fuzzBytes) u16() uint16 { return uint16(b.u8())<<8 | uint16(b.u8()) }

func (b *fuzzBytes) u32() uint32 { return uint32(b.u16())<<16 | uint32(b.u16()) }

// fuzzCount decodes a Limit, Burst or Capacity: small mostly, or close to 2^53.
func fuzzCount(b *fuzzBytes) int64 {
	v := b.u8()
	if v&0x80 != 0 {
		return 1<<53 - int64(v&0x7f)
	}
	return 1 + int64(v%64)
}

// fuzzWindow decodes a window: up to about 4s, or (rarely) beyond MaxMicros.
func fuzzWindow(b *fuzzBytes) time.Duration {
	v := b.u32()
	if v>>31 != 0 && v&0xff == 0xff {
		return time.Duration(algo.MaxMicros+int64(v>>8)) * time.Microsecond
	}
	return time.Duration(1+int64(v%4_000_000)) * time.Microsecond
}

// fuzzRate decodes a rate, log-uniform in [1e-6, top], non-round.
func fuzzRate(b *fuzzBytes, top float64) float64 {
	f := float64(b.u32()) / math.MaxUint32
	return math.Min(top, 1e-6*math.Pow(top/1e-6, f))
}

// fuzzOps decodes a start instant and at most 64 operations of 5 bytes: a signed step
// scaled to the algorithm's period, N around Limit, MaxWait, and a refund flag.
func fuzzOps(b *fuzzBytes, a algo.Algorithm) (int64, []op) {
	start := int64(int32(b.u32())) * 1000
	if start&1000 != 0 {
		start += today
	}
	p, limit := period(a), limitOf(a)
	// Steps of at most 2^45 µs keep 64 of them from today within ±2^52 µs (years 1827 to
	// 2112), the instants the algorithms are made for: float64 (and Lua) hold them exactly
	// with room to spare.
	scale := min(max(1, p/1024), 1<<30)
	var ops []op
	for len(*b) > 0 && len(ops) < 64 {
		var o op
		o.dt = int64(int16(b.u16())) * scale
		flags := b.u8()
		switch v := int64(b.u8()); {
		case flags&0x40 != 0:
			o.n = limit - 2 + v%5 // around Limit: Limit+1 and +2 are impossible
		default:
			o.n = v%8 - 1 // -1 to 6
		}
		switch mw := b.u8(); mw {
		case 0:
		case 255:
			o.maxWait = algo.Forever
		default:
			o.maxWait = time.Duration(int64(mw)*max(1, p/64)) * time.Microsecond
		}
		if flags&0x80 != 0 {
			o.refund = 1 + int(flags&0x3f)
		}
		ops = append(ops, o)
	}
	return start, ops
}

// fuzzRun checks one decoded input: no panic, the Decision invariants and exactness probes
// at every step, the algorithm's bound, and the same decisions when run again.
func fuzzRun(t *testing.T, a algo.Algorithm, data fuzzBytes) {
	if a.Validate() != nil {
		return // the decoder may build configs Validate rejects (GCRA's Burst/Rate)
	}
	start, ops := fuzzOps(&data, a)
	var stats probeStats
	tl := run(t, a, start, ops, runOpts{probes: true, stats: &stats})
	checkBound(t, a, tl)
	again := run(t, a, start, ops, runOpts{})
	for i := range tl.decisions {
		if tl.decisions[i] != again.decisions[i] {
			t.Fatalf("%v: decision %d differs between runs: %+v, %+v", a, i, tl.decisions[i], again.decisions[i])
		}
	}
}

// fuzzSeeds adds a few hand-made inputs: a config, then operations of 5 bytes.
func fuzzSeeds(f *testing.F, config []byte) {
	f.Add(config)
	steady := append([]byte{}, config...)
	steady = append(steady, 0, 0, 0, 0) // start at 0
	for i := 0; i < 20; i++ {
		steady = append(steady, 0, 40, 0, 1, 0) // +40 scale, N=1, MaxWait 0
	}
	f.Add(steady)
	burst := append([]byte{}, config...)
	burst = append(burst, 0x12, 0x34, 0x56, 0x78)
	for i := 0; i < 10; i++ {
		burst = append(burst, 0, 0, 0x40, 2, 255)     // N=Limit, Forever
		burst = append(burst, 0xff, 0xf0, 0x81, 1, 9) // back 16 scale, refund, N=1
	}
	f.Add(burst)
	mixed := append([]byte{}, config...)
	mixed = binary.BigEndian.AppendUint32(mixed, 0xdeadbeef)
	for i := 0; i < 30; i++ {
		mixed = append(mixed, byte(i*37), byte(i*11), byte(i*73), byte(i*5), byte(i*29))
	}
	f.Add(mixed)
}

func FuzzFixedWindow(f *testing.F) {
	fuzzSeeds(f, []byte{5, 0, 0x0f, 0x42, 0x40})
	f.Fuzz(func(t *testing.T, data []byte) {
		b := fuzzBytes(data)
		fuzzRun(t, algo.FixedWindow{Limit: fuzzCount(&b), Window: fuzzWindow(&b)}, b)
	})
}

func FuzzSlidingLog(f *testing.F) {
	fuzzSeeds(f, []byte{5, 0, 0x0f, 0x42, 0x40})
	f.Fuzz(func(t *testing.T, data []byte) {
		b := fuzzBytes(data)
		fuzzRun(t, algo.SlidingWindowLog{Limit: fuzzCount(&b), Window: fuzzWindow(&b)}, b)
	})
}

func FuzzSlidingCounter(f *testing.F) {
	fuzzSeeds(f, []byte{5, 0, 0x0f, 0x42, 0x40})
	f.Fuzz(func(t *testing.T, data []byte) {
		b := fuzzBytes(data)
		fuzzRun(t, algo.SlidingWindowCounter{Limit: fuzzCount(&b), Window: fuzzWindow(&b)}, b)
	})
}

func FuzzTokenBucket(f *testing.F) {
	fuzzSeeds(f, []byte{5, 0x80, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		b := fuzzBytes(data)
		fuzzRun(t, algo.TokenBucket{Burst: fuzzCount(&b), Rate: fuzzRate(&b, 1e9)}, b)
	})
}

func FuzzLeakyBucket(f *testing.F) {
	fuzzSeeds(f, []byte{5, 0x80, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		b := fuzzBytes(data)
		fuzzRun(t, algo.LeakyBucket{Capacity: fuzzCount(&b), Rate: fuzzRate(&b, 1e9)}, b)
	})
}

func FuzzGCRA(f *testing.F) {
	fuzzSeeds(f, []byte{5, 0x80, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		b := fuzzBytes(data)
		fuzzRun(t, algo.GCRA{Burst: fuzzCount(&b), Rate: fuzzRate(&b, 1e6)}, b)
	})
}
