package local

import (
	"hash/maphash"
	"strconv"
	"testing"
)

// TestHashShortKeys checks the inline hash of keys up to 16 bytes: every byte counts (a
// change of any one byte changes the hash), and a million keys of the usual shapes do not
// collide, in 64 bits nor much more than chance in the low bits that pick a shard.
func TestHashShortKeys(t *testing.T) {
	t.Parallel()
	h := newHasher()
	for n := 1; n <= 17; n++ {
		key := []byte("abcdefghijklmnopq"[:n])
		base := h.hash(string(key))
		for i := range key {
			k := append([]byte(nil), key...)
			k[i] ^= 1
			if h.hash(string(k)) == base {
				t.Errorf("hash(%q) = hash(%q)", k, key)
			}
		}
	}
	if got, want := h.hash(""), h.hash(""); got != want {
		t.Errorf("hash(\"\") not stable: %x, %x", got, want)
	}
	if h2 := newHasher(); h2.hash("user:1") == h.hash("user:1") {
		t.Error("two stores hash a key alike: the seed is not used")
	}
	const n = 1 << 20
	seen := make(map[uint64]string, n)
	var buckets [256]int
	for i := range n {
		k := "user:" + strconv.Itoa(i)
		if i%2 == 1 {
			k = "10.0." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255)
			if i >= 1<<16 {
				k = "g" + strconv.Itoa(i)
			}
		}
		x := h.hash(k)
		if o, dup := seen[x]; dup && o != k {
			t.Fatalf("hash(%q) = hash(%q) = %x", k, o, x)
		}
		seen[x] = k
		buckets[x&255]++
	}
	for b, c := range buckets {
		if c < n/256*9/10 || c > n/256*11/10 {
			t.Errorf("low byte %d holds %d of %d keys, want about %d", b, c, n, n/256)
		}
	}
}

func BenchmarkHash(b *testing.B) {
	h := newHasher()
	seed := maphash.MakeSeed()
	for _, k := range []string{"a", "user:123456", "0123456789abcdefXYZ"} {
		b.Run("inline/"+strconv.Itoa(len(k)), func(b *testing.B) {
			for b.Loop() {
				_ = h.hash(k)
			}
		})
		b.Run("maphash/"+strconv.Itoa(len(k)), func(b *testing.B) {
			for b.Loop() {
				_ = maphash.String(seed, k)
			}
		})
	}
}
