//go:build amd64 && !race

package local

// unlockStore stores 0 to *p with a plain MOV (keylock_amd64.s): on amd64 a store is
// never reordered with the loads and stores before it, so it releases the lock as an
// atomic store would, without the locked XCHG that atomic.Store compiles to. It is in
// assembly so that the compiler, which cannot see into it, keeps every access to the
// guarded state before it. The race detector cannot see it either: race builds use
// keylock_other.go.
//
//go:noescape
func unlockStore(p *uint32)

// spinPause runs n PAUSE instructions: a spinning waiter's delay (keylock_amd64.s).
//
//go:noescape
func spinPause(n uint32)
