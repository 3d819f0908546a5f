// Package luawire is the wire format between the Redis store and the Lua twins of the
// algorithms: how a call's ARGV is encoded, how its reply is decoded, the Lua every
// script starts with (base.lua, [BaseLua]) and the rule scripts are composed by
// ([Composed]), and how the store turns such a script into a Redis 7 function library
// ([Library], [RateLibrary]). algo.Script documents the calling convention for authors of
// custom algorithms; this package is its one Go implementation, used by the distributed
// store and by the tests of package algo.
//
// It imports nothing of the module, so that package algo (which starts its scripts with
// [BaseLua]) and its in-package tests can use it.
package luawire
