package clientip

import (
	"net/netip"
	"testing"
)

func TestKey(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		addr string
		bits int
		want string
	}{
		{"192.0.2.1", 64, "192.0.2.1"},
		{"192.0.2.1", 128, "192.0.2.1"},
		{"2001:db8:1:2:3:4:5:6", 64, "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff::1", 64, "2001:db8:1:2::/64"},
		{"2001:db8:1:2:3:4:5:6", 56, "2001:db8:1::/56"},
		{"2001:db8:1:2:3:4:5:6", 128, "2001:db8:1:2:3:4:5:6"},
	} {
		if got := Key(netip.MustParseAddr(c.addr), c.bits); got != c.want {
			t.Errorf("Key(%s, %d) = %q, want %q", c.addr, c.bits, got, c.want)
		}
	}
}
