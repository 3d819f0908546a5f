//go:build !amd64 || race

package local

import "sync/atomic"

// unlockStore stores 0 to *p atomically (see keylock_amd64.go).
func unlockStore(p *uint32) { atomic.StoreUint32(p, 0) }

// spinPause is a waiter's delay: none here, so a waiter yields sooner.
func spinPause(uint32) {}
