package nilcheck_test

import (
	"testing"

	"github.com/ratekit/limiter/internal/nilcheck"
)

type impl struct{}

func (*impl) M() {}

type iface interface{ M() }

func TestNil(t *testing.T) {
	t.Parallel()
	var typed *impl
	var m map[string]int
	var f func()
	for _, tc := range []struct {
		name string
		v    any
		want bool
	}{
		{"untyped nil", nil, true},
		{"typed nil pointer", typed, true},
		{"typed nil in an interface", iface(typed), true},
		{"nil map", m, true},
		{"nil func", f, true},
		{"pointer", &impl{}, false},
		{"value", impl{}, false},
		{"int", 0, false},
	} {
		if got := nilcheck.Nil(tc.v); got != tc.want {
			t.Errorf("%s: Nil = %v, want %v", tc.name, got, tc.want)
		}
	}
}
