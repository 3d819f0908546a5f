package grpclimit_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/grpclimit"
	"github.com/ratekit/limiter/httplimit"
)

// TestByPeerOverGRPC checks that clients on different addresses have their own limits
// and that two connections from one address share one.
func TestByPeerOverGRPC(t *testing.T) {
	t.Parallel()
	l, _, _ := newLimiter(t, algo.FixedWindow{Limit: 1, Window: time.Minute})
	s := startServer(t, newInterceptors(t, l), true) // ByPeer is the default
	a1 := s.dial(t, "192.0.2.1:1000")
	a2 := s.dial(t, "192.0.2.1:2000") // same host, other port: same key
	b := s.dial(t, "[2001:db8::1]:1000")
	b2 := s.dial(t, "[2001:db8::2]:1000") // same /64: same key
	c := s.dial(t, "[2001:db8:0:1::1]:1000")

	want(t, "a1", check(t, a1), ok)
	want(t, "a2, same address", check(t, a2), outcome{codes.ResourceExhausted, time.Minute})
	want(t, "b", watch(t, b), ok)
	want(t, "b again", check(t, b), outcome{codes.ResourceExhausted, time.Minute})
	want(t, "b2, same /64", check(t, b2), outcome{codes.ResourceExhausted, time.Minute})
	want(t, "c, another /64", check(t, c), ok)
}

// TestByPeerNotIP checks that a peer without an IP address (bufconn's own address, as a
// Unix socket would be) is the server's error: Internal, not a shared key.
func TestByPeerNotIP(t *testing.T) {
	t.Parallel()
	l, _, _ := newLimiter(t, algo.FixedWindow{Limit: 10, Window: time.Minute})
	var handled error
	s := startServer(t, newInterceptors(t, l, recordErrors(&handled)), false)
	c := s.dial(t, "bufnet")
	want(t, "check", check(t, c), outcome{codes.Internal, -1})
	if !errors.Is(handled, httplimit.ErrInvalidAddress) {
		t.Errorf("error handler got %v, want one wrapping ErrInvalidAddress", handled)
	}
	if s.served() != 0 {
		t.Error("handler called without a key")
	}
}

// TestByPeerKeysIPv6By64 (issue 35.7): by default an IPv6 peer is keyed by its /64, as
// httplimit.ByIP keys it (before, by its full address, so a client holding a /64 could
// rotate keys at will); httplimit.IPv6Prefix sets the length. TrustedProxies does not
// apply to a gRPC peer: an error, as is an IPv6Prefix out of range.
func TestByPeerKeysIPv6By64(t *testing.T) {
	t.Parallel()
	keyOf := func(key grpclimit.KeyFunc, addr string) string {
		t.Helper()
		k, err := key(peer.NewContext(t.Context(), &peer.Peer{Addr: stringAddr(addr)}), checkMethod)
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		return k
	}
	def := byPeer(t)
	for addr, want := range map[string]string{
		"[2001:db8:1:2:3:4:5:6]:1": "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1]:1": "2001:db8:1:2::/64",
		"192.0.2.1:1":              "192.0.2.1",
		"[::ffff:192.0.2.1]:1":     "192.0.2.1",
	} {
		if got := keyOf(def, addr); got != want {
			t.Errorf("ByPeer(): %s keyed %q, want %q", addr, got, want)
		}
	}
	if got := keyOf(byPeer(t, httplimit.IPv6Prefix(56)), "[2001:db8:1:2::1]:1"); got != "2001:db8:1::/56" {
		t.Errorf("ByPeer(IPv6Prefix(56)) keyed %q, want 2001:db8:1::/56", got)
	}
	if got := keyOf(byPeer(t, nil, httplimit.IPv6Prefix(128)), "[2001:db8:1:2::1]:1"); got != "2001:db8:1:2::1" {
		t.Errorf("ByPeer(IPv6Prefix(128)) keyed %q, want the full address", got)
	}
	for name, opt := range map[string]httplimit.IPOption{
		"IPv6Prefix(0)":  httplimit.IPv6Prefix(0),
		"TrustedProxies": httplimit.TrustedProxies("10.0.0.0/8"),
	} {
		if key, err := grpclimit.ByPeer(opt); key != nil || !errors.Is(err, algo.ErrInvalidConfig) ||
			!strings.Contains(err.Error(), "grpclimit.ByPeer") {
			t.Errorf("ByPeer(%s) = %v, %v; want no KeyFunc and an error wrapping ErrInvalidConfig naming ByPeer", name, key != nil, err)
		}
	}
}

// byPeer is grpclimit.ByPeer(opts...), which must build.
func byPeer(t *testing.T, opts ...httplimit.IPOption) grpclimit.KeyFunc {
	t.Helper()
	key, err := grpclimit.ByPeer(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func TestByPeer(t *testing.T) {
	t.Parallel()
	key := byPeer(t, httplimit.IPv6Prefix(128))
	for _, tc := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.1"), Port: 443}, "192.0.2.1"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.1"), Port: 443}, "192.0.2.1"},
		{&net.TCPAddr{IP: net.ParseIP("2001:DB8:0:0::1"), Port: 443, Zone: "eth0"}, "2001:db8::1"},
		{&net.UDPAddr{IP: net.ParseIP("198.51.100.7"), Port: 53}, "198.51.100.7"},
		{stringAddr("[2001:db8::2%eth0]:80"), "2001:db8::2"},
		{stringAddr("::ffff:203.0.113.9"), "203.0.113.9"},
	} {
		ctx := peer.NewContext(t.Context(), &peer.Peer{Addr: tc.addr})
		got, err := key(ctx, checkMethod)
		if err != nil || got != tc.want {
			t.Errorf("ByPeer(%v) = %q, %v; want %q", tc.addr, got, err, tc.want)
		}
	}
	for _, ctx := range []context.Context{
		t.Context(), // no peer
		peer.NewContext(t.Context(), &peer.Peer{}),
		peer.NewContext(t.Context(), &peer.Peer{Addr: &net.UnixAddr{Name: "/run/app.sock", Net: "unix"}}),
	} {
		if got, err := key(ctx, checkMethod); !errors.Is(err, httplimit.ErrInvalidAddress) {
			t.Errorf("ByPeer = %q, %v; want an error wrapping ErrInvalidAddress", got, err)
		}
	}
}

// stringAddr is a net.Addr known only by its string.
type stringAddr string

func (a stringAddr) Network() string { return "test" }
func (a stringAddr) String() string  { return string(a) }

func TestByMetadata(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", "x api key", "x:key", "ключ"} {
		if key, err := grpclimit.ByMetadata(name); key != nil || !errors.Is(err, algo.ErrInvalidConfig) {
			t.Errorf("ByMetadata(%q) = %v, %v; want no KeyFunc and an error wrapping ErrInvalidConfig", name, key != nil, err)
		}
	}
	key := byMetadata(t, "X-API-Key")
	in := func(kv ...string) context.Context {
		return metadata.NewIncomingContext(t.Context(), metadata.Pairs(kv...))
	}
	for _, tc := range []struct {
		ctx  context.Context
		want string
	}{
		{in("x-api-key", " k1 "), "k1"},
		{in("x-api-key", "k1", "x-api-key", "k2"), "k1"},
	} {
		if got, err := key(tc.ctx, checkMethod); err != nil || got != tc.want {
			t.Errorf("ByMetadata = %q, %v; want %q", got, err, tc.want)
		}
	}
	for _, ctx := range []context.Context{t.Context(), in("other", "k"), in("x-api-key", "  ")} {
		if got, err := key(ctx, checkMethod); !errors.Is(err, httplimit.ErrMissingKey) {
			t.Errorf("ByMetadata = %q, %v; want an error wrapping ErrMissingKey", got, err)
		}
	}
}

// TestByMetadataOverGRPC checks per-value limits, whatever the connection, and that a
// call without the entry gets InvalidArgument without consulting the limiter.
func TestByMetadataOverGRPC(t *testing.T) {
	t.Parallel()
	l, _, _ := newLimiter(t, algo.FixedWindow{Limit: 1, Window: time.Minute})
	s := startServer(t, newInterceptors(t, l, grpclimit.WithKey(byMetadata(t, "x-api-key"))), true)
	a := s.dial(t, "192.0.2.1:1000")
	b := s.dial(t, "192.0.2.2:1000")

	want(t, "k1 from a", check(t, a, "x-api-key", "k1"), ok)
	want(t, "k1 from b", watch(t, b, "x-api-key", "k1"), outcome{codes.ResourceExhausted, time.Minute})
	want(t, "k2 from a", check(t, a, "x-api-key", "k2"), ok)
	want(t, "no key", check(t, a), outcome{codes.InvalidArgument, -1})
	if got, w := s.served(), int64(2); got != w {
		t.Errorf("handler served %d calls, want %d", got, w)
	}
}

// TestCustomKey checks a KeyFunc of one's own: it gets the full method name, an empty
// key counts as missing (InvalidArgument), and any other error is Internal.
func TestCustomKey(t *testing.T) {
	t.Parallel()
	l, _, _ := newLimiter(t, algo.FixedWindow{Limit: 1, Window: time.Minute})
	byMethod := func(ctx context.Context, m string) (string, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		switch {
		case len(md.Get("fail")) > 0:
			return "", errors.New("user store down")
		case len(md.Get("empty")) > 0:
			return "", nil
		}
		return "method:" + m, nil
	}
	s := startServer(t, newInterceptors(t, l, grpclimit.WithKey(byMethod)), true)
	c := s.dial(t, "192.0.2.1:1000")
	want(t, "check", check(t, c), ok)
	want(t, "watch, its own key", watch(t, c), ok)
	want(t, "check again", check(t, c), outcome{codes.ResourceExhausted, time.Minute})
	want(t, "empty key", check(t, c, "empty", "1"), outcome{codes.InvalidArgument, -1})
	want(t, "key error", check(t, c, "fail", "1"), outcome{codes.Internal, -1})
}
