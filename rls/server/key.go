package server

import "strings"

// keyEscaper makes the parts of a limiter key unambiguous: '|' separates the parts and '='
// a key from its value, so both are escaped inside a part, and so is the escape byte.
var keyEscaper = strings.NewReplacer("%", "%25", "|", "%7C", "=", "%3D")

// limiterKey is the key a request descriptor is counted under: its domain and every entry,
// "domain|k1=v1|k2=v2", each part escaped, so two different descriptors never share a key
// whatever bytes their keys and values hold. Like envoyproxy/ratelimit's cache key it
// holds the request's values, not the rule's, so a value-less rule counts each value
// apart, and it does not hold the limit, so a reload that changes a limit keeps the count.
func limiterKey(domain string, entries []entry) string {
	var b strings.Builder
	b.Grow(len(domain) + 16*len(entries))
	b.WriteString(keyEscaper.Replace(domain))
	for _, e := range entries {
		b.WriteByte('|')
		b.WriteString(keyEscaper.Replace(e.key))
		b.WriteByte('=')
		b.WriteString(keyEscaper.Replace(e.value))
	}
	return b.String()
}
