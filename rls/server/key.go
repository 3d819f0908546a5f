package server

import "strings"

// limiterKey is the key a request descriptor is counted under: its domain and every entry,
// "domain|k1=v1|k2=v2", each part escaped ('|' separates the parts and '=' a key from its
// value, so both are escaped inside a part as %7C and %3D, and so is the escape byte '%' as
// %25), so two different descriptors never share a key whatever bytes their keys and
// values hold. Like envoyproxy/ratelimit's cache key it holds the request's values, not the
// rule's, so a value-less rule counts each value apart, and it does not hold the limit, so
// a reload that changes a limit keeps the count.
//
// It is built in one allocation of its exact length: the in-memory store keeps the string
// as the key of a new entry, so any spare capacity would be held per key.
func limiterKey(domain string, entries []entry) string {
	n := escapedLen(domain)
	for _, e := range entries {
		n += 2 + escapedLen(e.key) + escapedLen(e.value)
	}
	var b strings.Builder
	b.Grow(n)
	writeEscaped(&b, domain)
	for _, e := range entries {
		b.WriteByte('|')
		writeEscaped(&b, e.key)
		b.WriteByte('=')
		writeEscaped(&b, e.value)
	}
	return b.String()
}

// escapedLen is the length of s once escaped by writeEscaped.
func escapedLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		if escaped(s[i]) {
			n += 2
		}
	}
	return n
}

// writeEscaped writes s with each '%', '|' and '=' as %XX.
func writeEscaped(b *strings.Builder, s string) {
	start := 0
	for i := 0; i < len(s); i++ {
		if escaped(s[i]) {
			b.WriteString(s[start:i])
			b.WriteByte('%')
			b.WriteByte(hexDigits[s[i]>>4])
			b.WriteByte(hexDigits[s[i]&0xf])
			start = i + 1
		}
	}
	b.WriteString(s[start:])
}

func escaped(c byte) bool { return c == '%' || c == '|' || c == '=' }

const hexDigits = "0123456789ABCDEF"
