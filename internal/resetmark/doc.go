// Package resetmark holds what both stores of the module keep of a Reset: a mark on each
// state it forgot, so that a Refund of a grant made before the Reset is not given to the
// state that replaces it.
//
// A Refund names its grant by permits and instant (the grant's Decision.At), nothing
// else, so the new state cannot tell an earlier grant's refund from one of its own: given
// back after new grants, the permits would come on top of the limit. The mark records the
// Reset's instant (the store's now); a Refund whose grant acts before it is dropped while
// the mark lasts: Until, the Reset's instant plus twice the algorithm's [Horizon], after
// which no such refund can add permits anywhere (a window's grant is out of the current
// window, a bucket's refund is outweighed by what the new state granted since, or the
// bucket is full). A grant made before the Reset that acts after it (a reservation still
// queued) is not told apart: its refund reaches the new state, which gets at most the
// permits the reservation would have used after the Reset (TestResetQueuedCancelAddsNothing).
//
// The local store keeps the marks in memory; the Redis store keeps each beside the state
// key it marks (that key followed by [Suffix], a string packing the two instants), written
// by its Reset script and read by every algorithm's refund (algo/prelude.lua).
package resetmark
