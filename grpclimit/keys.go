package grpclimit

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/httplimit"
	"github.com/ratekit/limiter/internal/clientip"
)

// KeyFunc returns the key a call is limited under: a client IP address, an API key, a
// tenant or user ID. Calls with the same key share one limit. ctx is the call's incoming
// context (it carries the peer and the metadata; use peer.FromContext and
// metadata.FromIncomingContext) and fullMethod its full method name, such as
// "/grpc.health.v1.Health/Check".
//
// It has the shape of httplimit.KeyFunc, with the call in place of the request, and the
// same errors: an error means the key cannot be computed, and the interceptor then answers
// through its error handler (see WithErrorHandler) without consulting the limiter. An error
// wrapping httplimit.ErrMissingKey blames the client (codes.InvalidArgument by default);
// any other error, httplimit.ErrInvalidAddress among them, blames the server
// (codes.Internal). An empty key with a nil error is treated as an error wrapping
// httplimit.ErrMissingKey.
type KeyFunc func(ctx context.Context, fullMethod string) (string, error)

// ByPeer returns a KeyFunc that keys a call by the IP address of the connection it came
// on (peer.FromContext), normalised as httplimit.ByIP normalises a request's, so that one
// client has one key: an IPv4 client by its address ("192.0.2.1", also when it comes
// IPv4-mapped as "::ffff:192.0.2.1"), an IPv6 client by its /64 network in CIDR form
// ("2001:db8:1:2::/64": a host usually holds a whole /64 and picks any address in it;
// httplimit.IPv6Prefix changes the length, 128 keys by the full address in its canonical
// RFC 5952 form), zone and port dropped. ByPeer() is the interceptors' default key, and
// httplimit.ByIP's twin.
//
// Nil options are skipped. IPv6Prefix out of range, and TrustedProxies (a gRPC peer has
// no X-Forwarded-For: behind a proxy key by something it forwards, with ByMetadata or a
// KeyFunc of your own), make ByPeer return an error wrapping algo.ErrInvalidConfig that
// names it, and no KeyFunc.
//
// A peer address that is not an IP address (a Unix socket, for example) is an error of
// the KeyFunc wrapping httplimit.ErrInvalidAddress: every such client would share one
// key, which is rarely meant.
func ByPeer(opts ...httplimit.IPOption) (KeyFunc, error) {
	o := clientip.Options{V6Bits: clientip.DefaultV6Bits}
	for _, opt := range opts {
		if a, ok := opt.(clientip.Applier); ok { // every IPOption; not a nil one
			a.ApplyIP(&o)
		}
	}
	switch {
	case o.Err != nil:
		return nil, fmt.Errorf("%w: grpclimit.ByPeer: %w", algo.ErrInvalidConfig, o.Err)
	case o.TrustedSet:
		return nil, fmt.Errorf("%w: grpclimit.ByPeer: TrustedProxies applies to httplimit.ByIP: a gRPC peer has no X-Forwarded-For", algo.ErrInvalidConfig)
	}
	return byPeer(o.V6Bits), nil
}

// byPeer is ByPeer with IPv6 peers keyed by their network of v6Bits bits.
func byPeer(v6Bits int) KeyFunc {
	return func(ctx context.Context, _ string) (string, error) {
		p, ok := peer.FromContext(ctx)
		if !ok || p.Addr == nil {
			return "", fmt.Errorf("%w: no peer in the call's context", httplimit.ErrInvalidAddress)
		}
		a, err := peerIP(p.Addr)
		if err != nil {
			return "", err
		}
		return clientip.Key(a, v6Bits), nil
	}
}

// peerIP reads the IP address of a peer: from a *net.TCPAddr or *net.UDPAddr directly,
// else by parsing addr.String() as "host:port" or a bare address.
func peerIP(addr net.Addr) (netip.Addr, error) {
	switch a := addr.(type) {
	case *net.TCPAddr:
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			return ip.Unmap(), nil
		}
	case *net.UDPAddr:
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			return ip.Unmap(), nil
		}
	}
	s := addr.String()
	host := s
	if h, _, err := net.SplitHostPort(s); err == nil {
		host = h
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%w: %s address %q", httplimit.ErrInvalidAddress, addr.Network(), s)
	}
	return ip.WithZone("").Unmap(), nil
}

// ByMetadata returns a KeyFunc that keys a call by the value of its incoming metadata
// entry name (for example "x-api-key"; gRPC metadata names are lower-case, and name is
// lower-cased to match), with surrounding spaces trimmed: httplimit.ByHeader's twin. When
// the call carries several values the first one is used. A missing or empty entry is an
// error wrapping httplimit.ErrMissingKey (codes.InvalidArgument by default).
//
// The value is taken as the client sends it: key by metadata only when something
// upstream (an authenticating proxy, an earlier interceptor) has checked it, or when a
// client that invents values only hurts itself, since each new value starts with a full
// limit.
//
// A name that is not a valid metadata name (empty, or with characters other than
// letters, digits, '-', '_' and '.') makes ByMetadata return an error wrapping
// algo.ErrInvalidConfig, and no KeyFunc: no call could ever carry it.
func ByMetadata(name string) (KeyFunc, error) {
	if !validMetadataName(name) {
		return nil, fmt.Errorf("%w: grpclimit.ByMetadata(%q): not a metadata name", algo.ErrInvalidConfig, name)
	}
	name = strings.ToLower(name)
	return func(ctx context.Context, _ string) (string, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		if vs := md.Get(name); len(vs) > 0 {
			if v := strings.TrimSpace(vs[0]); v != "" {
				return v, nil
			}
		}
		return "", fmt.Errorf("%w: metadata %q is missing or empty", httplimit.ErrMissingKey, name)
	}, nil
}

// validMetadataName reports whether name is a gRPC metadata name (of any case: names are
// lower-cased): 0-9 a-z A-Z - _ . only.
func validMetadataName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
