package local

import (
	"hash/maphash"
	"math/bits"
)

// The store hashes each key once per call, for its shard and its table (see table). Keys
// of up to 16 bytes, the usual user IDs, IP addresses and names, are hashed inline by the
// short-input path of wyhash, seeded per store: a few multiplications where maphash.String
// takes three calls into the runtime; longer keys go to maphash. A forged collision costs
// a longer probe (entries are told apart by hash and key) and a crowded shard: never a
// wrong answer.

// hasher hashes keys for one store.
type hasher struct {
	seed   maphash.Seed // for keys longer than 16 bytes
	s0, s1 uint64       // wyhash's seeds for the short ones, from seed
}

// wyhash's constants.
const (
	wyp0 = 0xa0761d6478bd642f
	wyp1 = 0xe7037ed1a0b428db
)

func newHasher() hasher {
	h := hasher{seed: maphash.MakeSeed()}
	h.s0 = maphash.String(h.seed, "s0")
	h.s1 = wymix(h.s0^wyp0, maphash.String(h.seed, "s1")^wyp1)
	return h
}

// wymix is wyhash's mix: the 128-bit product of a and b, its halves xored.
func wymix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// hash returns the hash of key.
func (h *hasher) hash(key string) uint64 {
	n := len(key)
	if n > 16 {
		return maphash.String(h.seed, key)
	}
	var a, b uint64
	switch {
	case n >= 4:
		// The first and last four bytes, and for 8 bytes or more the four after the first
		// and before the last: every byte is read at least once.
		m := (n >> 3) << 2
		a = uint64(le32(key, 0))<<32 | uint64(le32(key, m))
		b = uint64(le32(key, n-4))<<32 | uint64(le32(key, n-4-m))
	case n > 0:
		a = uint64(key[0])<<16 | uint64(key[n>>1])<<8 | uint64(key[n-1])
	}
	a ^= h.s1
	b ^= h.s0
	b, a = bits.Mul64(a, b)
	return wymix(a^wyp0^uint64(n), b^h.s1)
}

// le32 reads the four bytes of s at i, little-endian.
func le32(s string, i int) uint32 {
	s = s[i : i+4]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}
