package distributed

import (
	"strconv"
	"strings"
)

// escape percent-encodes '%', '{' and '}' so that the result contains no brace and distinct
// inputs stay distinct. Any other byte (NUL, invalid UTF-8, spaces, unicode) passes through:
// Redis keys are binary safe.
//
// Why: Redis Cluster hashes only the part of a key between the first '{' and the first '}'
// after it. A state key is <prefix>{<escaped key>}:<slot><suffix>, so with no brace in the
// prefix or the escaped key the hash tag is exactly the escaped user key. That keeps every
// key one decision touches (a sliding log's list and its counter) in one slot, as a script
// requires, and spreads different user keys over the slots. Unescaped, a user key "}x"
// would produce the empty tag "{}", which Redis ignores, hashing the whole key name and
// scattering one decision's keys over several slots (CROSSSLOT); a key "a}b" would hash as
// "a", piling every "a}..." key onto one slot.
func escape(s string) string {
	if !strings.ContainsAny(s, "%{}") {
		return s // the common case allocates nothing
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '%':
			b.WriteString("%25")
		case '{':
			b.WriteString("%7B")
		case '}':
			b.WriteString("%7D")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// stateKeys returns the Redis keys of one decision: <prefix>{<escaped key>}:<slot> followed
// by each suffix ("" is the state key itself).
func stateKeys(prefix, key, slot string, suffixes []string) []string {
	return appendStateKeys(make([]string, 0, len(suffixes)), prefix, key, slot, suffixes)
}

// appendStateKeys appends the keys stateKeys returns to dst.
func appendStateKeys(dst []string, prefix, key, slot string, suffixes []string) []string {
	ek := escape(key)
	var b strings.Builder
	b.Grow(len(prefix) + len(ek) + len(slot) + 3)
	b.WriteString(prefix)
	b.WriteByte('{')
	b.WriteString(ek)
	b.WriteString("}:")
	b.WriteString(slot)
	base := b.String()
	for _, s := range suffixes {
		if s == "" {
			dst = append(dst, base)
		} else {
			dst = append(dst, base+s)
		}
	}
	return dst
}

// quoteKey quotes a user key for an error message, shortening a long one.
func quoteKey(key string) string {
	const show = 64
	if len(key) <= show {
		return strconv.Quote(key)
	}
	return strconv.Quote(key[:show]) + "… (" + strconv.Itoa(len(key)) + " bytes)"
}
