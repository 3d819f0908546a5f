package leasing

import (
	"context"

	"github.com/ratekit/limiter/algo"
)

// LeaseOf reports, for the tests of package leasing_test, the callers waiting for key's
// lease under a and the permits the lease holds (0, 0 without a lease).
func LeaseOf(s *Store, key string, a algo.Algorithm) (waiting int, left int64) {
	l := s.lookup(context.Background(), leaseKey{key, a.Slot()}, false)
	if l == nil {
		return 0, 0
	}
	defer l.mu.Unlock()
	return len(l.waiting), l.left
}
