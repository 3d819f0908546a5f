package bench

import (
	"math"
	"math/bits"
	"time"
)

// subBits is the number of bits of a value kept below its leading one: every power of two
// is split into 2^subBits buckets, so a bucket is at most 1/32 of its values wide.
const subBits = 5

const (
	subCount   = 1 << subBits
	numBuckets = (64 - subBits) * subCount
)

// Histogram counts durations in logarithmic buckets: exact below 32 ns, then 32 buckets per
// power of two, so a quantile is reported within 3.2 % of the true value. Its zero value
// is empty and ready to use. It is not safe for concurrent use: give each goroutine its
// own and Merge them.
type Histogram struct {
	counts   [numBuckets]uint64
	n        uint64
	sum      time.Duration
	min, max time.Duration
}

// bucket returns the index of the bucket holding v ≥ 0.
func bucket(v uint64) int {
	if v < subCount {
		return int(v)
	}
	shift := bits.Len64(v) - subBits - 1 // v>>shift is in [32, 64)
	return (shift+1)*subCount + int(v>>uint(shift)) - subCount
}

// upper returns the largest value of bucket b.
func upper(b int) uint64 {
	if b < subCount {
		return uint64(b)
	}
	shift := b/subCount - 1
	m := uint64(b%subCount + subCount)
	return (m+1)<<uint(shift) - 1
}

// Record adds one duration; negative durations count as 0.
func (h *Histogram) Record(d time.Duration) {
	d = max(d, 0)
	h.counts[bucket(uint64(d))]++
	if h.n == 0 || d < h.min {
		h.min = d
	}
	h.max = max(h.max, d)
	h.n++
	h.sum += d
}

// Merge adds every duration recorded in o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

// Count returns the number of durations recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Max returns the longest duration recorded, 0 when none was.
func (h *Histogram) Max() time.Duration { return h.max }

// Mean returns the mean of the durations recorded, 0 when none was.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return h.sum / time.Duration(h.n)
}

// Quantile returns the q-quantile (q in [0, 1], clamped) of the durations recorded: the
// largest value of the bucket holding the ceil(q × Count())-th smallest duration, never
// more than Max nor less than the smallest. It returns 0 when nothing was recorded.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	if math.IsNaN(q) || q < 0 {
		q = 0
	}
	rank := uint64(math.Ceil(min(q, 1) * float64(h.n)))
	rank = max(rank, 1)
	var seen uint64
	for b, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(max(time.Duration(upper(b)), h.min), h.max)
		}
	}
	return h.max
}
