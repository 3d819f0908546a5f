package grpclimit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

// KeyFunc returns the key a call is limited under: a client IP address, an API key, a
// tenant or user ID. Calls with the same key share one limit. ctx is the call's incoming
// context (it carries the peer and the metadata; use peer.FromContext and
// metadata.FromIncomingContext) and fullMethod its full method name, such as
// "/grpc.health.v1.Health/Check".
//
// An error means the key cannot be computed; the interceptor then answers through its
// error handler (see WithErrorHandler) without consulting the limiter. An error wrapping
// ErrMissingKey blames the client (codes.InvalidArgument by default); any other error
// blames the server (codes.Internal). An empty key with a nil error is treated as an
// error wrapping ErrMissingKey.
type KeyFunc func(ctx context.Context, fullMethod string) (string, error)

// Errors returned by the KeyFuncs of this package. Test for them with errors.Is.
var (
	// ErrMissingKey reports a call that does not carry the key the KeyFunc looks for,
	// such as a missing metadata entry. It is the client's fault: the default error
	// handler answers codes.InvalidArgument. Custom KeyFuncs may wrap it to get the same
	// answer.
	ErrMissingKey = errors.New("grpclimit: call has no key")

	// ErrInvalidAddress reports a peer whose address is not an IP address (a Unix
	// socket, an in-memory connection) or has no peer at all in its context. It is the
	// server's fault, since the KeyFunc does not fit the transport: the default error
	// handler answers codes.Internal.
	ErrInvalidAddress = errors.New("grpclimit: peer has no IP address")
)

// ByPeer returns a KeyFunc that keys a call by the IP address of the connection it came
// on (peer.FromContext), normalised so that one client has one key: the port and any
// zone are dropped, IPv4-mapped IPv6 addresses become IPv4 ("::ffff:192.0.2.1" is
// "192.0.2.1"), and IPv6 addresses take their canonical compressed form (RFC 5952). It is
// the interceptors' default key.
//
// A peer address that is not an IP address (a Unix socket, for example) is an error
// wrapping ErrInvalidAddress: every such client would share one key, which is rarely
// meant. Behind a proxy, every call comes from the proxy's address: key by something the
// proxy forwards (ByMetadata) or write a KeyFunc that reads it.
func ByPeer() KeyFunc {
	return func(ctx context.Context, _ string) (string, error) {
		p, ok := peer.FromContext(ctx)
		if !ok || p.Addr == nil {
			return "", fmt.Errorf("%w: no peer in the call's context", ErrInvalidAddress)
		}
		a, err := peerIP(p.Addr)
		if err != nil {
			return "", err
		}
		return a.String(), nil
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
		return netip.Addr{}, fmt.Errorf("%w: %s address %q", ErrInvalidAddress, addr.Network(), s)
	}
	return ip.WithZone("").Unmap(), nil
}

// ByMetadata returns a KeyFunc that keys a call by the value of its incoming metadata
// entry name (for example "x-api-key"; gRPC metadata names are lower-case, and name is
// lower-cased to match), with surrounding spaces trimmed. When the call carries several
// values the first one is used. A missing or empty entry is an error wrapping
// ErrMissingKey (codes.InvalidArgument by default).
//
// The value is taken as the client sends it: key by metadata only when something
// upstream (an authenticating proxy, an earlier interceptor) has checked it, or when a
// client that invents values only hurts itself, since each new value starts with a full
// limit.
func ByMetadata(name string) KeyFunc {
	name = strings.ToLower(name)
	return func(ctx context.Context, _ string) (string, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		if vs := md.Get(name); len(vs) > 0 {
			if v := strings.TrimSpace(vs[0]); v != "" {
				return v, nil
			}
		}
		return "", fmt.Errorf("%w: metadata %q is missing or empty", ErrMissingKey, name)
	}
}
