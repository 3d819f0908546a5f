package luawire

import (
	"crypto/sha1"
	_ "embed" // base.lua
	"encoding/hex"
	"strconv"
	"strings"
)

// BaseLua is the Lua every script of the module starts with ([Composed]): the helpers
// that read the time (read_now: the server's TIME, a client's time, or a client's time and
// the TTL padding), compute a TTL (ttl_ms: padded, at least 2 ms) and format numbers
// (num), and serve, the last call of every script.
//
//go:embed base.lua
var BaseLua string

// Composed reports whether src follows the module's composition rule, which every script
// of the module follows (the algorithms', the semaphore's, the penalty's around a script
// of package algo, the composite's and Reset's):
//
//   - it is BaseLua followed by the script's own files, each whole;
//   - its top level only defines local constants and functions, and its last statement
//     is `return serve(call)` (serve of BaseLua), call() answering one call;
//   - it reads ARGV[2] in the form "now pad" too ([PaddedNow]) and pads every TTL it sets.
//
// Such a script runs as it is (EVAL, EVALSHA), and loads as a Redis 7 function library
// ([Library], [RateLibrary]) whose helpers are made once, when it loads. A script that
// does not start with BaseLua (a custom algorithm's) is sent as it is, with a plain now.
func Composed(src string) bool { return strings.HasPrefix(src, BaseLua) }

// Library returns the FUNCTION LOAD code of src, a [Composed] script, and the name of the
// one function it registers (the library has the same name): src runs once, when the
// library loads, with KEYS and ARGV nil, and its serve returns the function the library
// registers, so FCALL fn numkeys KEYS... ARGV... decides exactly as EVALSHA of src. The
// name carries the SHA-1 of src, so that two versions of a script never share a name: a
// server holding an older library beside a newer one runs each client's own.
func Library(src string) (fn, lib string) {
	fn, lib = library(src)
	return fn, lib + "redis.register_function('" + fn + "', call)\n"
}

// QuickSuffix ends the name of the second function a [RateLibrary] registers, MultiSuffix
// that of the third.
const (
	QuickSuffix  = "_q"
	MultiSuffix  = "_m"
	ChargeSuffix = "_c"
)

// RateLibrary is [Library] for the [Composed] script of a rate algorithm (it answers the
// calling convention of algo.Script), whose calls name keys keys each. Besides fn, the
// library registers two functions that the transport sends in its place, built from fn's
// call alone:
//
//   - quick (fn followed by [QuickSuffix]) for the commonest call, an "apply" of N = 1 with
//     MaxWait 0 at the server's TIME: its ARGV is the config alone (the script's ARGV[5..]),
//     and it replies the decision packed in one string ([ParseDecision] reads both forms).
//     Four arguments fewer and one bulk string rather than an array of seven integers cost
//     Redis less per decision.
//   - multi (fn followed by [MultiSuffix]): the quick call for several keys at once, all
//     at one reading of the server's TIME. KEYS holds each call's keys in turn, ARGV the
//     config they share. It replies one string, each call's reply in turn: its packed
//     decision, or 'E', the length of an error's message (4 bytes, little-endian) and the
//     message (an error of one call leaves the others alone; see [SplitMulti]). A call's
//     error is worded as the server words it for the same call sent alone (an error table
//     or a command's error as its own message, a Lua error as "ERR <message> script:
//     <function>, on @user_function."), so that the store classes it alike.
//   - charges (fn followed by [ChargeSuffix]): multi for "charge" calls (algo.Request.Charge)
//     at the server's TIME, each with its own N: ARGV holds each call's N in turn, then
//     the config they share; the reply is multi's.
func RateLibrary(src string, keys int) (fn, quick, multi, lib string) {
	fn, lib = library(src)
	quick, multi = fn+QuickSuffix, fn+MultiSuffix
	nk := strconv.Itoa(keys)
	lib += "redis.register_function('" + fn + "', call)\n" +
		"-- the ARGV of an apply of N = 1, MaxWait 0 at the server's TIME, of config cfg; one\n" +
		"-- table, refilled on every call (a call runs to its end before the next starts)\n" +
		"local qargs = {'apply', '', '1', '0'}\n" +
		"local function quick_args(cfg)\n" +
		"  local m = #cfg\n" +
		"  for i = 1, m do qargs[4 + i] = cfg[i] end\n" +
		"  for i = #qargs, m + 5, -1 do qargs[i] = nil end\n" +
		"  return qargs\n" +
		"end\n" +
		"local function packed(r) return struct.pack('<Bddddddd', " + packedTagLua + ", r[1], r[2], r[3], r[4], r[5], r[6], r[7]) end\n" +
		"redis.register_function('" + quick + "', function(keys, cfg)\n" +
		"  local r = call(keys, quick_args(cfg))\n" +
		"  if type(r) == 'table' and r[7] then return packed(r) end\n" +
		"  return r -- an error reply\n" +
		"end)\n" +
		"-- the multi function's call in turn, run by xpcall: an error stays that call's, worded\n" +
		"-- as FCALL words it for the call alone (xpcall's handler sees what was raised, where\n" +
		"-- pcall turns a table into its message): an error table (error({err = ...}), or\n" +
		"-- redis.call's) as its message, with its own code; a Lua error as 'ERR ... script: ...'\n" +
		"local m_keys, m_args, m_first\n" +
		"local function m_call() return call_shared(m_keys, m_args, m_first) end\n" +
		"local function m_error(e)\n" +
		"  if type(e) == 'table' then return tostring(e.err) end\n" +
		"  return 'ERR ' .. tostring(e) .. ' script: " + multi + ", on @user_function.'\n" +
		"end\n" +
		"-- each runs m_args on each call's keys of keys in turn; ns, when given, holds each\n" +
		"-- call's N (ARGV[3]) in turn\n" +
		"local function each(keys, ns)\n" +
		"  local out, one, n = {}, {}, 0\n" +
		"  for i = 1, #keys, " + nk + " do\n" +
		"    for j = 1, " + nk + " do one[j] = keys[i + j - 1] end\n" +
		"    if ns then m_args[3] = ns[n + 1] end\n" +
		"    m_keys, m_first = one, n == 0 -- the first reads TIME for all (serve of BaseLua)\n" +
		"    local ok, r = xpcall(m_call, m_error)\n" +
		"    n = n + 1\n" +
		"    if ok and type(r) == 'table' and r[7] then\n" +
		"      out[n] = packed(r)\n" +
		"    else\n" +
		"      if ok then r = type(r) == 'table' and r.err or 'ERR the reply does not follow the calling convention' end -- an error replied\n" +
		"      r = tostring(r)\n" +
		"      out[n] = struct.pack('<Bi4', " + errorTagLua + ", #r) .. r\n" +
		"    end\n" +
		"  end\n" +
		"  return table.concat(out)\n" +
		"end\n" +
		"redis.register_function('" + multi + "', function(keys, cfg)\n" +
		"  m_args = quick_args(cfg)\n" +
		"  return each(keys, nil)\n" +
		"end)\n" +
		"-- the ARGV of a charge at the server's TIME, MaxWait 0, of config cfg (N set per call)\n" +
		"local cargs = {'charge', '', '1', '0'}\n" +
		"redis.register_function('" + fn + ChargeSuffix + "', function(keys, argv)\n" +
		"  local calls = #keys / " + nk + "\n" +
		"  local m = #argv - calls\n" +
		"  for i = 1, m do cargs[4 + i] = argv[calls + i] end\n" +
		"  for i = #cargs, m + 5, -1 do cargs[i] = nil end\n" +
		"  m_args = cargs\n" +
		"  return each(keys, argv)\n" +
		"end)\n"
	return fn, quick, multi, lib
}

// library returns the name of src's library and its code up to the registrations: src
// run once in a function that returns call and call_shared (serve of BaseLua), with KEYS
// and ARGV nil (see Composed).
func library(src string) (fn, lib string) {
	sum := sha1.Sum([]byte(src))
	fn = "ratekit_" + hex.EncodeToString(sum[:10])
	var b strings.Builder
	b.Grow(len(src) + 1024)
	b.WriteString("#!lua name=" + fn + "\n")
	b.WriteString("local KEYS, ARGV -- nil while the library loads: the script's serve returns its call\n")
	b.WriteString("local call, call_shared = (function()\n")
	b.WriteString(src)
	b.WriteString("\nend)()\n")
	return fn, b.String()
}
