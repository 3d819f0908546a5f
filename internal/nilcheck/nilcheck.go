// Package nilcheck tells the constructors of the module whether an interface argument is
// nil, including a typed nil (a nil *redis.Client in a redis.UniversalClient, a nil
// *local.Store in a store.Store), which a comparison with nil does not catch and which
// would otherwise panic at first use.
package nilcheck

import "reflect"

// Nil reports whether v is nil or holds a nil pointer, map, slice, channel, func or
// interface.
func Nil(v any) bool {
	if v == nil {
		return true
	}
	switch r := reflect.ValueOf(v); r.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.Interface, reflect.UnsafePointer:
		return r.IsNil()
	}
	return false
}
