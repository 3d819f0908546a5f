package local

import (
	"runtime"
	"sync/atomic"
)

// keyLock is the lock of one entry (entry.mu): a spin lock whose Unlock is a plain store
// where that is a release (amd64, see unlockStore). sync.Mutex's Unlock is a locked XADD,
// as it must learn of waiters to wake, and costs about what the CAS of Lock does: the
// fast path of Apply then makes one atomic read-modify-write per call, not two. It suits
// what the entry's lock guards: a decision or a few field writes, nothing that blocks. A
// waiter yields its P after a few tries, so a holder that was preempted gets to run.
type keyLock struct{ v uint32 } // 1 while held; read and written only as below

func (l *keyLock) Lock() {
	if !atomic.CompareAndSwapUint32(&l.v, 0, 1) {
		l.lockSlow()
	}
}

// lockSlow waits for the lock: tries spaced by pauses that double (a decision takes well
// under a µs, and a waiter that backs off lets the holder run on without fighting it for
// the cache line), then a yield per try.
func (l *keyLock) lockSlow() {
	for i := 0; ; i++ {
		if atomic.LoadUint32(&l.v) == 0 && atomic.CompareAndSwapUint32(&l.v, 0, 1) {
			return
		}
		if i < 8 {
			spinPause(4 << i)
		} else {
			runtime.Gosched()
		}
	}
}

func (l *keyLock) Unlock() { unlockStore(&l.v) }
