package httplimit_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/httplimit"
)

func request(remote string, xff ...string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = remote
	for _, v := range xff {
		r.Header.Add("X-Forwarded-For", v)
	}
	return r
}

type keyCase struct {
	name   string
	remote string
	xff    []string
	want   string // "" when an error is wanted
}

func checkKeys(t *testing.T, key httplimit.KeyFunc, cases []keyCase) {
	t.Helper()
	for _, c := range cases {
		got, err := key(request(c.remote, c.xff...))
		switch {
		case c.want == "" && err == nil:
			t.Errorf("%s: key %q, want an error", c.name, got)
		case c.want == "" && !errors.Is(err, httplimit.ErrInvalidAddress):
			t.Errorf("%s: error %v, want one wrapping ErrInvalidAddress", c.name, err)
		case c.want != "" && err != nil:
			t.Errorf("%s: error %v, want key %q", c.name, err, c.want)
		case got != c.want:
			t.Errorf("%s: key %q, want %q", c.name, got, c.want)
		}
	}
}

func TestByIPRemoteAddr(t *testing.T) {
	t.Parallel()
	checkKeys(t, mustByIP(t, httplimit.IPv6Prefix(128)), []keyCase{
		{"IPv4 with port", "192.0.2.1:1234", nil, "192.0.2.1"},
		{"IPv4 without port", "192.0.2.1", nil, "192.0.2.1"},
		{"IPv6 with port", "[2001:DB8:0:0::1]:443", nil, "2001:db8::1"},
		{"IPv6 without port", "2001:db8::0:1", nil, "2001:db8::1"},
		{"IPv6 in brackets", "[2001:db8::1]", nil, "2001:db8::1"},
		{"IPv4-mapped IPv6", "[::ffff:192.0.2.1]:80", nil, "192.0.2.1"},
		{"zone dropped", "[fe80::1%eth0]:80", nil, "fe80::1"},
		{"loopback v6", "[::1]:80", nil, "::1"},
		{"X-Forwarded-For ignored without trusted proxies", "192.0.2.1:1", []string{"198.51.100.7"}, "192.0.2.1"},
		{"garbage", "not-an-address", nil, ""},
		{"host name", "localhost:80", nil, ""},
		{"empty", "", nil, ""},
		{"port only", ":80", nil, ""},
		{"IPv4 out of range", "256.0.0.1:1", nil, ""},
	})
}

func TestByIPTrustedProxies(t *testing.T) {
	t.Parallel()
	key := mustByIP(t, httplimit.TrustedProxies("10.0.0.0/8", "2001:db8:ffff::/48"), httplimit.TrustedProxies("192.0.2.7"),
		httplimit.IPv6Prefix(128))
	const client = "198.51.100.7"
	checkKeys(t, key, []keyCase{
		{"untrusted peer: spoofed header ignored", "203.0.113.9:1", []string{"1.2.3.4"}, "203.0.113.9"},
		{"untrusted peer, trusted-looking header", "203.0.113.9:1", []string{"10.0.0.1"}, "203.0.113.9"},
		{"one proxy", "10.0.0.1:1", []string{client}, client},
		{"one proxy, client spoofs a prefix", "10.0.0.1:1", []string{"6.6.6.6, " + client}, client},
		{"client spoofs a trusted address", "10.0.0.1:1", []string{"10.9.9.9, " + client}, client},
		{"chain of proxies", "10.0.0.1:1", []string{client + ", 10.0.0.3, 10.0.0.2"}, client},
		{"chain over several headers", "10.0.0.1:1", []string{"6.6.6.6, " + client, "10.0.0.3", "10.0.0.2"}, client},
		{"single trusted address", "192.0.2.7:1", []string{client}, client},
		{"IPv6 proxy", "[2001:db8:ffff::1]:443", []string{client}, client},
		{"IPv6 client", "10.0.0.1:1", []string{"2001:DB8::7"}, "2001:db8::7"},
		{"IPv6 client with port", "10.0.0.1:1", []string{"[2001:db8::7]:5555"}, "2001:db8::7"},
		{"IPv4 client with port", "10.0.0.1:1", []string{client + ":5555"}, client},
		{"IPv4-mapped proxy is trusted", "[::ffff:10.0.0.1]:1", []string{client}, client},
		{"IPv4-mapped client", "10.0.0.1:1", []string{"::ffff:" + client}, client},
		{"empty members", "10.0.0.1:1", []string{client + ", , 10.0.0.2,"}, client},
		{"garbage left of the client is the client's", "10.0.0.1:1", []string{"garbage, " + client}, client},
		{"all hops trusted: left-most", "10.0.0.1:1", []string{"10.0.0.5, 10.0.0.3"}, "10.0.0.5"},
		{"no header: the proxy itself", "10.0.0.1:1", nil, "10.0.0.1"},
		{"empty header: the proxy itself", "10.0.0.1:1", []string{""}, "10.0.0.1"},
		{"garbage written by a trusted proxy", "10.0.0.1:1", []string{client + ", garbage"}, ""},
		{"bad RemoteAddr", "nonsense", []string{client}, ""},
	})
}

func TestTrustedProxiesInvalid(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"10.0.0.0/33", "nope", "10.0.0.0/", "::ffff:10.0.0.0/90"} {
		key, err := httplimit.ByIP(httplimit.TrustedProxies("10.0.0.0/8", arg))
		if key != nil || !errors.Is(err, httplimit.ErrInvalidAddress) || !errors.Is(err, algo.ErrInvalidConfig) ||
			!strings.Contains(err.Error(), "httplimit.ByIP") || !strings.Contains(err.Error(), arg) {
			t.Errorf("TrustedProxies(%q): ByIP error %v, want one wrapping ErrInvalidConfig and ErrInvalidAddress naming ByIP and the argument", arg, err)
		}
	}
	// IPv4-mapped prefixes stand for their IPv4 prefix.
	key := mustByIP(t, httplimit.TrustedProxies("::ffff:10.0.0.0/104"))
	if got, err := key(request("10.1.2.3:1", "198.51.100.7")); err != nil || got != "198.51.100.7" {
		t.Errorf("TrustedProxies(::ffff:10.0.0.0/104): key %q, %v; want 198.51.100.7", got, err)
	}
}

// TestByIPKeysIPv6By64 (issue 35.7): by default an IPv6 client is keyed by its /64, the
// network a host is usually assigned and can pick any address in: before, it was keyed by
// its full address, so it could rotate keys at will. IPv4 clients keep their address, and
// so do IPv6 ones with IPv6Prefix(128). Behind trusted proxies the forwarded client is
// keyed the same way.
func TestByIPKeysIPv6By64(t *testing.T) {
	t.Parallel()
	checkKeys(t, mustByIP(t), []keyCase{
		{"IPv6 keyed by /64", "[2001:db8:1:2:3:4:5:6]:1", nil, "2001:db8:1:2::/64"},
		{"same /64, another address", "[2001:db8:1:2:ffff::1]:1", nil, "2001:db8:1:2::/64"},
		{"another /64", "[2001:db8:1:3::1]:1", nil, "2001:db8:1:3::/64"},
		{"IPv4 keyed by address", "192.0.2.1:1", nil, "192.0.2.1"},
		{"IPv4-mapped keyed as IPv4", "[::ffff:192.0.2.1]:1", nil, "192.0.2.1"},
	})
	checkKeys(t, mustByIP(t, httplimit.TrustedProxies("10.0.0.0/8")), []keyCase{
		{"forwarded IPv6 client", "10.0.0.1:1", []string{"2001:db8:1:2::7"}, "2001:db8:1:2::/64"},
	})
	checkKeys(t, mustByIP(t, httplimit.IPv6Prefix(128)), []keyCase{
		{"IPv6Prefix(128): the full address", "[2001:db8:1:2:3:4:5:6]:1", nil, "2001:db8:1:2:3:4:5:6"},
	})
}

func TestIPv6Prefix(t *testing.T) {
	t.Parallel()
	checkKeys(t, mustByIP(t, httplimit.IPv6Prefix(64)), []keyCase{
		{"IPv6 keyed by /64", "[2001:db8:1:2:3:4:5:6]:1", nil, "2001:db8:1:2::/64"},
		{"same /64, another address", "[2001:db8:1:2:ffff::1]:1", nil, "2001:db8:1:2::/64"},
		{"IPv4 keyed by address", "192.0.2.1:1", nil, "192.0.2.1"},
		{"IPv4-mapped keyed as IPv4", "[::ffff:192.0.2.1]:1", nil, "192.0.2.1"},
	})
	for _, bits := range []int{0, -1, 129} {
		key, err := httplimit.ByIP(httplimit.IPv6Prefix(bits))
		want := fmt.Sprintf("IPv6Prefix(%d)", bits)
		if key != nil || !errors.Is(err, algo.ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: ByIP error %v, want one wrapping ErrInvalidConfig naming the option", want, err)
		}
	}
	checkKeys(t, mustByIP(t, httplimit.IPv6Prefix(128)), []keyCase{
		{"IPv6Prefix(128)", "[2001:db8::1]:1", nil, "2001:db8::1"},
	})
	checkKeys(t, mustByIP(t, nil, httplimit.IPv6Prefix(1), nil), []keyCase{
		{"IPv6Prefix(1), nil options", "[2001:db8::1]:1", nil, "::/1"},
	})
}

// TestByIPSpoofing builds random proxy chains: a client, whatever it chose to put in
// X-Forwarded-For, then trusted proxies that each append the address they saw. The key
// must always be the client's real address.
func TestByIPSpoofing(t *testing.T) {
	t.Parallel()
	seed := uint64(20260101)
	rng := rand.New(rand.NewPCG(seed, 0))
	trusted := []string{"10.0.0.0/8", "2001:db8:ffff::/48"}
	key := mustByIP(t, httplimit.TrustedProxies(trusted...), httplimit.IPv6Prefix(128))
	untrusted := func() netip.Addr {
		if rng.IntN(2) == 0 {
			return netip.AddrFrom4([4]byte{198, 51, byte(rng.IntN(256)), byte(1 + rng.IntN(254))})
		}
		var b [16]byte
		b[0], b[1] = 0x20, 0x01
		b[2], b[3] = 0x0d, 0xb9 // 2001:db9::/32, outside the trusted /48
		for i := 4; i < 16; i++ {
			b[i] = byte(rng.IntN(256))
		}
		return netip.AddrFrom16(b)
	}
	proxy := func() netip.Addr {
		if rng.IntN(2) == 0 {
			return netip.AddrFrom4([4]byte{10, byte(rng.IntN(256)), byte(rng.IntN(256)), byte(1 + rng.IntN(254))})
		}
		return netip.MustParseAddr(fmt.Sprintf("2001:db8:ffff::%x", 1+rng.IntN(0xfffe)))
	}
	for i := 0; i < 2000; i++ {
		client := untrusted()
		// What the client wrote: nothing, garbage, or addresses of its choosing,
		// trusted-looking ones included.
		var spoof []string
		for j := rng.IntN(4); j > 0; j-- {
			switch rng.IntN(3) {
			case 0:
				spoof = append(spoof, "garbage")
			case 1:
				spoof = append(spoof, untrusted().String())
			default:
				spoof = append(spoof, proxy().String())
			}
		}
		hops := append(spoof, client.String())
		peer := proxy()
		for j := rng.IntN(3); j > 0; j-- { // further proxies in front of the first
			hops = append(hops, peer.String())
			peer = proxy()
		}
		// Proxies may split the list over several header lines.
		var lines []string
		for len(hops) > 0 {
			n := 1 + rng.IntN(len(hops))
			lines = append(lines, strings.Join(hops[:n], ", "))
			hops = hops[n:]
		}
		remote := netip.AddrPortFrom(peer, 443).String()
		got, err := key(request(remote, lines...))
		if err != nil || got != client.String() {
			t.Fatalf("seed %d, case %d: RemoteAddr %s, X-Forwarded-For %q: key %q, %v; want %s",
				seed, i, remote, lines, got, err, client)
		}
	}
}

func TestByHeaderInvalidName(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", " ", "X API Key", "X-Key:", "X-Kéy", "X-Key\n"} {
		key, err := httplimit.ByHeader(name)
		if key != nil || !errors.Is(err, algo.ErrInvalidConfig) || !strings.Contains(err.Error(), "httplimit.ByHeader") {
			t.Errorf("ByHeader(%q): error %v, want one wrapping ErrInvalidConfig naming ByHeader", name, err)
		}
	}
	for _, name := range []string{"X-API-Key", "x_tenant.id", "!#$%&'*+-.^_`|~0"} {
		if _, err := httplimit.ByHeader(name); err != nil {
			t.Errorf("ByHeader(%q): %v, want a KeyFunc", name, err)
		}
	}
}

func TestByHeader(t *testing.T) {
	t.Parallel()
	key := mustByHeader(t, "x-api-key")
	for _, c := range []struct {
		name   string
		values []string
		want   string
	}{
		{"present", []string{"k-123"}, "k-123"},
		{"trimmed", []string{"  k-123\t"}, "k-123"},
		{"first of several", []string{"a", "b"}, "a"},
		{"missing", nil, ""},
		{"empty", []string{""}, ""},
		{"blank", []string{"   "}, ""},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		for _, v := range c.values {
			r.Header.Add("X-Api-Key", v)
		}
		got, err := key(r)
		switch {
		case c.want == "" && !errors.Is(err, httplimit.ErrMissingKey):
			t.Errorf("%s: key %q, error %v; want an error wrapping ErrMissingKey", c.name, got, err)
		case c.want != "" && (err != nil || got != c.want):
			t.Errorf("%s: key %q, error %v; want %q", c.name, got, err, c.want)
		}
	}
}
