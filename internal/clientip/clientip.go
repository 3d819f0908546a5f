// Package clientip holds what httplimit.ByIP and grpclimit.ByPeer share: the options
// (httplimit.IPOption values, which grpclimit applies through Applier) and the key of a
// client address.
package clientip

import "net/netip"

// DefaultV6Bits is the prefix length IPv6 clients are keyed by unless httplimit.IPv6Prefix
// says otherwise: a /64 is what a host is usually assigned, and it can pick any address
// in it.
const DefaultV6Bits = 64

// Options is what the IP options set.
type Options struct {
	Trusted    []netip.Prefix // TrustedProxies' prefixes
	TrustedSet bool           // TrustedProxies was given (grpclimit.ByPeer rejects it)
	V6Bits     int            // IPv6Prefix's; DefaultV6Bits unless set
	Err        error          // the first invalid option
}

// Applier is implemented by every httplimit.IPOption, so that grpclimit, outside package
// httplimit, can apply them.
type Applier interface{ ApplyIP(*Options) }

// Key is the key of the client at a (zone dropped, IPv4-mapped unmapped): an IPv4 address
// as it is ("192.0.2.1"), an IPv6 one by its network of v6Bits bits in CIDR form
// ("2001:db8:1:2::/64"), or as it is (RFC 5952) when v6Bits is 128.
func Key(a netip.Addr, v6Bits int) string {
	if a.Is6() && v6Bits < 128 {
		p, _ := a.Prefix(v6Bits) // bits in [0, 128]: no error
		return p.String()
	}
	return a.String()
}
