package httplimit

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/clientip"
)

// KeyFunc returns the key a request is limited under: a client IP address, an API token,
// a user ID. Requests with the same key share one limit. An error means the key cannot be
// computed; the middleware then answers through its error handler (see WithErrorHandler)
// without consulting the limiter. A KeyFunc whose error wraps ErrMissingKey blames the
// client (400 Bad Request by default); any other error blames the server (500).
//
// An empty key with a nil error is treated as an error wrapping ErrMissingKey.
type KeyFunc func(*http.Request) (string, error)

// Errors returned by the key functions of this package and of grpclimit (whose KeyFunc
// has this one's shape, with the call in place of the request): they are defined here
// only. Test for them with errors.Is.
var (
	// ErrMissingKey reports a request (or gRPC call) that does not carry the key the
	// KeyFunc looks for, such as a missing header or metadata entry. It is the client's
	// fault: the default error handler answers 400 Bad Request (gRPC: InvalidArgument).
	// Custom KeyFuncs may wrap it to get the same answer.
	ErrMissingKey = errors.New("httplimit: request has no key")

	// ErrInvalidAddress reports a client address that is not an IP address: a RemoteAddr
	// rewritten by a faulty middleware, a trusted proxy that forwards garbage in
	// X-Forwarded-For, a gRPC peer on a Unix socket or with no address. It is the
	// server's (or its proxies') fault: the default error handler answers 500 Internal
	// Server Error (gRPC: Internal). ByIP's error for a TrustedProxies argument that is
	// not an address or CIDR prefix wraps it too.
	ErrInvalidAddress = errors.New("httplimit: invalid client address")
)

// IPOption configures ByIP. A nil IPOption is ignored; an IPOption given a value it cannot
// use makes ByIP return an error wrapping algo.ErrInvalidConfig.
type IPOption interface {
	applyIP(*ipOptions)
}

type ipOptions = clientip.Options

type ipOptionFunc func(*ipOptions)

func (f ipOptionFunc) applyIP(o *ipOptions) { f(o) }

// ApplyIP is applyIP for grpclimit.ByPeer, which takes IPOptions too (clientip.Applier).
func (f ipOptionFunc) ApplyIP(o *ipOptions) { f(o) }

// TrustedProxies names the reverse proxies (load balancers, CDNs) whose X-Forwarded-For
// header ByIP believes, as CIDR prefixes ("10.0.0.0/8", "2001:db8::/32") or single
// addresses ("192.0.2.7"). Several calls add up. The default is none: X-Forwarded-For is
// ignored and the key is the connection's address (RemoteAddr), because anyone can write
// that header. A connection from a trusted proxy is keyed by the address the last trusted
// proxy saw, the right-most X-Forwarded-For entry that is not a trusted proxy, so a spoofed
// header cannot choose the key.
//
// An argument that does not parse makes ByIP return an error wrapping both
// algo.ErrInvalidConfig and ErrInvalidAddress, so the mistake shows at construction
// instead of silently trusting nobody.
//
// grpclimit.ByPeer takes IPOptions too, but not this one (a gRPC peer has no
// X-Forwarded-For): given to it, it is an error.
func TrustedProxies(cidrs ...string) IPOption {
	return ipOptionFunc(func(o *ipOptions) {
		o.TrustedSet = true
		for _, c := range cidrs {
			p, err := parsePrefix(c)
			if err != nil {
				if o.Err == nil {
					o.Err = err
				}
				continue
			}
			o.Trusted = append(o.Trusted, p)
		}
	})
}

// IPv6Prefix sets the length of the network IPv6 clients are keyed by, in bits. The
// default is 64: a single host is usually assigned a whole /64 and can pick any address
// in it, so keys by address would let it multiply its limit. The key is then the network
// in CIDR form ("2001:db8:1:2::/64"); 128 keys by the full address ("2001:db8::1"), and a
// shorter prefix (56, 48) groups the networks of one site. A value outside [1, 128] is an
// error. IPv4 clients are always keyed by address. grpclimit.ByPeer takes it too.
func IPv6Prefix(bits int) IPOption {
	return ipOptionFunc(func(o *ipOptions) {
		if bits < 1 || bits > 128 {
			if o.Err == nil {
				o.Err = fmt.Errorf("IPv6Prefix(%d): bits must be in [1, 128]", bits)
			}
			return
		}
		o.V6Bits = bits
	})
}

func parsePrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%w: TrustedProxies(%q): %w", ErrInvalidAddress, s, err)
		}
		if p.Addr().Is4In6() {
			// ::ffff:10.0.0.0/104 is 10.0.0.0/8: clients are compared unmapped.
			bits := p.Bits() - 96
			if bits < 0 {
				return netip.Prefix{}, fmt.Errorf("%w: TrustedProxies(%q): IPv4-mapped prefix shorter than /96", ErrInvalidAddress, s)
			}
			p = netip.PrefixFrom(p.Addr().Unmap(), bits)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%w: TrustedProxies(%q): %w", ErrInvalidAddress, s, err)
	}
	a = a.WithZone("").Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// ByIP returns a KeyFunc that keys a request by its client's IP address, normalised so
// that one client has one key: an IPv4 client by its address ("192.0.2.1", also when it
// comes IPv4-mapped as "::ffff:192.0.2.1"), an IPv6 client by its /64 network in CIDR
// form ("2001:db8:1:2::/64": a host usually holds a whole /64 and picks any address in
// it; IPv6Prefix changes the length, 128 keys by the full address in its canonical
// RFC 5952 form), zone and port dropped. By default the address is the connection's
// (http.Request.RemoteAddr); see TrustedProxies for X-Forwarded-For.
//
// A request whose address does not parse is an error of the KeyFunc wrapping
// ErrInvalidAddress. Nil options are skipped; an option with a value it cannot use (see
// each option) makes ByIP return an error wrapping algo.ErrInvalidConfig that names
// it, and no KeyFunc.
func ByIP(opts ...IPOption) (KeyFunc, error) {
	o := ipOptions{V6Bits: clientip.DefaultV6Bits}
	for _, opt := range opts {
		if opt != nil {
			opt.applyIP(&o)
		}
	}
	if o.Err != nil {
		return nil, fmt.Errorf("%w: httplimit.ByIP: %w", algo.ErrInvalidConfig, o.Err)
	}
	return func(r *http.Request) (string, error) {
		a, err := clientAddr(r, o.Trusted)
		if err != nil {
			return "", err
		}
		return clientip.Key(a, o.V6Bits), nil
	}, nil
}

// clientAddr finds the client's address as ByIP documents.
func clientAddr(r *http.Request, trusted []netip.Prefix) (netip.Addr, error) {
	peer, err := parseAddr(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%w: RemoteAddr %q", ErrInvalidAddress, r.RemoteAddr)
	}
	if len(trusted) == 0 || !isTrusted(peer, trusted) {
		return peer, nil
	}
	hops := r.Header.Values("X-Forwarded-For")
	if len(hops) == 0 {
		return peer, nil // the proxy's own request (a health check, say)
	}
	// Every entry right of the first untrusted one was appended by a trusted proxy, so
	// the walk only ever reads entries that our own infrastructure wrote.
	leftmost := peer
	for i := len(hops) - 1; i >= 0; i-- {
		parts := strings.Split(hops[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			s := strings.TrimSpace(parts[j])
			if s == "" {
				continue // "a, , b" or a trailing comma: empty list members are ignored
			}
			a, err := parseAddr(s)
			if err != nil {
				return netip.Addr{}, fmt.Errorf("%w: X-Forwarded-For entry %q after trusted proxy %v", ErrInvalidAddress, s, leftmost)
			}
			if !isTrusted(a, trusted) {
				return a, nil
			}
			leftmost = a
		}
	}
	return leftmost, nil
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// parseAddr reads an IP address, with or without port or brackets ("192.0.2.1",
// "192.0.2.1:443", "2001:db8::1", "[2001:db8::1]:443", "[2001:db8::1]"), and normalises
// it: zone dropped, IPv4-mapped addresses unmapped.
func parseAddr(s string) (netip.Addr, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.WithZone("").Unmap(), nil
	}
	host := s
	if h, _, err := net.SplitHostPort(s); err == nil {
		host = h
	} else if len(s) > 2 && s[0] == '[' && s[len(s)-1] == ']' {
		host = s[1 : len(s)-1]
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, err
	}
	return a.WithZone("").Unmap(), nil
}

// ByHeader returns a KeyFunc that keys a request by the value of its header name (for
// example "X-API-Key"), with surrounding spaces trimmed. When the request has several
// such headers the first one is used. A missing or empty header is an error wrapping
// ErrMissingKey (400 Bad Request by default).
//
// The value is taken as the client sends it: key by a header only when something upstream
// (an authenticating proxy, an earlier middleware) has checked it, or when a client that
// invents values only hurts itself, since each new value starts with a full limit.
//
// A name that is not a valid header field name (empty, or with characters outside the
// RFC 9110 token set, such as spaces or ':') makes ByHeader return an error wrapping
// algo.ErrInvalidConfig, and no KeyFunc: no request could ever carry it.
func ByHeader(name string) (KeyFunc, error) {
	if !validHeaderName(name) {
		return nil, fmt.Errorf("%w: httplimit.ByHeader(%q): not a header field name", algo.ErrInvalidConfig, name)
	}
	canonical := http.CanonicalHeaderKey(name)
	return func(r *http.Request) (string, error) {
		v := strings.TrimSpace(r.Header.Get(canonical))
		if v == "" {
			return "", fmt.Errorf("%w: header %s is missing or empty", ErrMissingKey, canonical)
		}
		return v, nil
	}, nil
}

// validHeaderName reports whether name is an RFC 9110 token, the syntax of a field name.
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
