package algocmp

import "testing"

type wrapper struct{ v any }

func TestComparable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v    any
		want bool
	}{
		{nil, false},
		{1, true},
		{struct{ a, b int }{1, 2}, true},
		{wrapper{1}, true},
		{wrapper{nil}, true},
		{[]int{1}, false},
		{struct{ tags []string }{}, false},
		{wrapper{[]int{1}}, false},
		{wrapper{wrapper{map[int]int{}}}, false},
		{[2]any{1, func() {}}, false},
	} {
		if got := Comparable(c.v); got != c.want {
			t.Errorf("Comparable(%#v) = %v, want %v", c.v, got, c.want)
		}
	}
}
