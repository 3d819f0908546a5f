package distributed

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// hashTag returns what Redis Cluster hashes for key: the bytes between the first '{' and
// the first '}' after it when that is not empty, else the whole key.
func hashTag(key string) string {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return key
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return key
	}
	return key[open+1 : open+1+end]
}

// unescape reverses escape, so the tests can check it loses nothing.
func unescape(t *testing.T, s string) string {
	t.Helper()
	r := strings.NewReplacer("%25", "%", "%7B", "{", "%7D", "}")
	return r.Replace(s)
}

func TestEscape(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"user:42", "user:42"},
		{"{a}", "%7Ba%7D"},
		{"}x", "%7Dx"},
		{"a}b{c", "a%7Db%7Bc"},
		{"100%", "100%25"},
		{"%7B", "%257B"},
		{"sp ace\x00nul", "sp ace\x00nul"},
		{"ключ🔑", "ключ🔑"},
		{"\xff\xfe", "\xff\xfe"},
	} {
		if got := escape(tc.in); got != tc.want {
			t.Errorf("escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := unescape(t, escape(tc.in)); got != tc.in {
			t.Errorf("unescape(escape(%q)) = %q", tc.in, got)
		}
	}
}

// TestStateKeysHashTag checks on random keys (fixed seed) that the hash tag of every key of
// a decision is exactly the escaped user key, and that distinct user keys give distinct
// Redis keys.
func TestStateKeysHashTag(t *testing.T) {
	t.Parallel()
	const seed = 20260101
	rng := rand.New(rand.NewPCG(seed, 0))
	alphabet := []byte("ab{}%7BD: \x00\xff")
	seen := map[string]string{}
	for i := 0; i < 20000; i++ {
		b := make([]byte, 1+rng.IntN(8))
		for j := range b {
			b[j] = alphabet[rng.IntN(len(alphabet))]
		}
		key := string(b)
		keys := stateKeys("limiter:", key, "sl:1000000", []string{"", ":log"})
		for _, k := range keys {
			if got, want := hashTag(k), escape(key); got != want {
				t.Fatalf("seed %d: hash tag of %q (user key %q) = %q, want %q", seed, k, key, got, want)
			}
		}
		if got, want := keys[1], keys[0]+":log"; got != want {
			t.Fatalf("seed %d: suffixed key = %q, want %q", seed, got, want)
		}
		if other, ok := seen[keys[0]]; ok && other != key {
			t.Fatalf("seed %d: user keys %q and %q share Redis key %q", seed, other, key, keys[0])
		}
		seen[keys[0]] = key
	}
}

func TestWithPrefixCannotBreakHashTag(t *testing.T) {
	t.Parallel()
	var o options
	WithPrefix("app{1}:").apply(&o)
	keys := stateKeys(o.prefix, "user", "tb", []string{""})
	if got, want := hashTag(keys[0]), "user"; got != want {
		t.Errorf("hash tag of %q = %q, want %q", keys[0], got, want)
	}
}

func TestQuoteKeyShortensLongKeys(t *testing.T) {
	t.Parallel()
	q := quoteKey(strings.Repeat("x", 10000))
	if len(q) > 100 || !strings.Contains(q, "10000 bytes") {
		t.Errorf("quoteKey(10 KB key) = %q, want a short quote naming the length", q)
	}
}

func TestEscapeCommonCaseDoesNotAllocate(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = escape("user:42") }); n != 0 {
		t.Errorf("escape of a plain key allocates %v times, want 0", n)
	}
}
