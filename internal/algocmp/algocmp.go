// Package algocmp tells whether an algorithm config can be kept and compared with == later
// without a panic: the question every store that remembers "the config this state (lease,
// denial) was given under" must ask before keeping one.
package algocmp

import "reflect"

// Comparable reports whether == on v cannot panic: v's dynamic type is comparable and so
// is every value its interfaces hold (a custom wrapper holding a slice, a map or a func,
// or holding such a wrapper, is not). A kept value that is Comparable can then be compared
// with any other value without a panic: == panics only on two values of one
// non-comparable type, and every value a Comparable one holds has a comparable type.
//
// It costs a few hundred ns and allocates when v's type holds interfaces (reflect walks
// the values): call it where a config is kept, not where a kept one is compared.
func Comparable(v any) bool {
	t := reflect.TypeOf(v)
	return t != nil && t.Comparable() && reflect.ValueOf(v).Comparable()
}
