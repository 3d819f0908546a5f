package server

import (
	"sync"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// scratch is the working memory of one ShouldRateLimit call: its checks and their entries,
// taken from a pool and given back when the call returns, so that a call allocates
// neither. Nothing of it outlives the call: the response holds its own messages (see
// newResponse) and the store its own key strings.
type scratch struct {
	checks  []check
	entries []entry
}

// maxPooledChecks bounds the checks (and maxPooledEntries the entries) of a scratch kept
// for reuse: a rare large request is served from memory of its own, not pinned in the pool.
const (
	maxPooledChecks  = 64
	maxPooledEntries = 256
)

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// getScratch returns a scratch with one zero check per descriptor of req (their count is
// bounded by the caller) and no entries.
func getScratch(req *rlsv3.RateLimitRequest) *scratch {
	sc := scratchPool.Get().(*scratch)
	n := len(req.GetDescriptors())
	if cap(sc.checks) < n {
		sc.checks = make([]check, n)
	}
	sc.checks = sc.checks[:n]
	sc.entries = sc.entries[:0]
	return sc
}

// entriesOf copies desc's entries (their count is bounded by the caller) into sc: the slice
// stays valid until release, even when a later call grows sc.entries into a new array.
func (sc *scratch) entriesOf(desc *ratelimitv3.RateLimitDescriptor) []entry {
	start := len(sc.entries)
	for _, e := range desc.GetEntries() {
		sc.entries = append(sc.entries, entry{e.GetKey(), e.GetValue()})
	}
	return sc.entries[start:len(sc.entries):len(sc.entries)]
}

// release zeroes sc, so that it holds no request's strings or rules, and pools it.
func (sc *scratch) release() {
	clear(sc.checks)
	clear(sc.entries[:cap(sc.entries)])
	if cap(sc.checks) > maxPooledChecks || cap(sc.entries) > maxPooledEntries {
		return
	}
	scratchPool.Put(sc)
}
