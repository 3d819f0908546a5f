// Package luawire is the wire format between the Redis store and the Lua twins of the
// algorithms: how a call's ARGV is encoded, how its reply is decoded, and the Lua helpers
// every script shares (base.lua). algo.Script documents the calling convention for
// authors of custom algorithms; this package is its one Go implementation, used by the
// distributed store and by the tests of package algo.
//
// It imports nothing of the module, so that package algo (which builds its scripts with
// [Library] and [BaseLua]) and its in-package tests can use it.
package luawire
