package luawire

import (
	"crypto/sha1"
	_ "embed" // base.lua
	"encoding/hex"
	"strconv"
	"strings"
)

// BaseLua is the Lua every script of the module starts with: the helpers that read the
// time (read_now: the server's TIME, a client's time, or a client's time and the TTL
// padding), compute a TTL (ttl_ms: padded, at least 2 ms) and format numbers (num).
//
//go:embed base.lua
var BaseLua string

// PerCall is the line of a script after which everything runs on every call; what comes
// before it (BaseLua, helpers) only defines constants and functions, so that a function
// library runs it once, when it loads. It must start the line and be followed by a
// newline-terminated comment.
const PerCall = "-- ---- per call:"

// Library returns the FUNCTION LOAD code of src, a script with a [PerCall] line, and the
// name of the one function it registers (the library has the same name). The part before
// the last PerCall line runs once, when the library loads; the function runs the rest,
// with KEYS and ARGV taken from its arguments, so FCALL fn numkeys KEYS... ARGV... decides
// exactly as EVALSHA of src. The name carries the SHA-1 of src, so that two versions of a
// script never share a name: a server holding an older library beside a newer one runs
// each client's own. It returns "", "" when src has no PerCall line.
func Library(src string) (fn, lib string) {
	fn, _, lib = library(src, false)
	return fn, lib
}

// QuickSuffix ends the name of the second function a [QuickLibrary] registers, MultiSuffix
// that of the third.
const (
	QuickSuffix = "_q"
	MultiSuffix = "_m"
)

// QuickLibrary is [Library] for the scripts of the rate algorithms, whose calls name keys
// keys each. Besides fn, which follows the calling convention unchanged, the library
// registers:
//
//   - quick (fn followed by [QuickSuffix]) for the commonest call, an "apply" of N = 1 with
//     MaxWait 0 at the server's TIME: its ARGV is the config alone (the script's ARGV[5..]),
//     and it replies the decision packed in one string ([ParseDecision] reads both forms).
//     Four arguments fewer and one bulk string rather than an array of seven integers cost
//     Redis about an eighth less per decision.
//   - fn followed by [MultiSuffix]: the quick call for several keys at once, all at one
//     reading of the server's TIME. KEYS holds each call's keys in turn, ARGV the config
//     they share. It replies one string, each call's reply in turn: its packed decision,
//     or 'E', the length of an error's message (4 bytes, little-endian) and the message
//     (an error of one call leaves the others alone; see [SplitMulti]). A batch of calls
//     on one server costs Redis about 30% less per decision this way than as quick calls.
//
// The script reads its config from ARGV[C + 1] on; it knows the call came through quick
// or multi by the upvalues quick and multi_now of [BaseLua], which the functions set.
func QuickLibrary(src string, keys int) (fn, quick, lib string) {
	fn, quick, lib = library(src, true)
	if lib == "" {
		return "", "", ""
	}
	nk := strconv.Itoa(keys)
	lib += "redis.register_function('" + fn + MultiSuffix + "', function(keys, args)\n" +
		"  redis = server_redis or api()\n" +
		"  quick, multi_now = true, read_now('')\n" +
		"  local out, one, n = {}, {}, 0\n" +
		"  for i = 1, #keys, " + nk + " do\n" +
		"    for j = 1, " + nk + " do one[j] = keys[i + j - 1] end\n" +
		"    local ok, r = pcall(call, one, args)\n" +
		"    n = n + 1\n" +
		"    if ok and type(r) == 'table' and r[7] then\n" +
		"      out[n] = " + packLua + "\n" +
		"    else\n" +
		"      if type(r) == 'table' then r = tostring(r.err) -- an error replied ({err = message}) or raised by redis.call: its code\n" +
		"      else r = 'ERR ' .. tostring(r) .. ' script: " + fn + MultiSuffix + ", on @user_function.' end -- raised: as FCALL words it\n" +
		"      out[n] = spack('<Bi4', " + errorTagLua + ", #r) .. r\n" +
		"    end\n" +
		"  end\n" +
		"  quick, multi_now = false, nil\n" +
		"  return table.concat(out)\n" +
		"end)\n"
	return fn, quick, lib
}

// packLua is the Lua expression of the packed form of the decision r (see ParseDecision).
const packLua = "spack('<Bddddddd', " + packedTagLua + ", r[1], r[2], r[3], r[4], r[5], r[6], r[7])"

func library(src string, withQuick bool) (fn, quick, lib string) {
	i := strings.LastIndex(src, "\n"+PerCall)
	if i < 0 {
		return "", "", ""
	}
	i++
	sum := sha1.Sum([]byte(src))
	fn = "ratekit_" + hex.EncodeToString(sum[:10])
	var b strings.Builder
	b.Grow(len(src) + 1024)
	b.WriteString("#!lua name=" + fn + "\n")
	b.WriteString("local KEYS, ARGV -- set by the function below on every call\n")
	b.WriteString(src[:i])
	b.WriteString("local function call(keys, args)\nKEYS, ARGV = keys, args\n")
	b.WriteString(src[i:])
	if !withQuick {
		b.WriteString("\nend\nredis.register_function('" + fn + "', call)\n")
		return fn, "", b.String()
	}
	quick = fn + QuickSuffix
	// An error raised by call leaves quick set: the other functions clear it first.
	b.WriteString("\nend\nredis.register_function('" + fn + "', function(keys, args) quick, multi_now = false, nil return call(keys, args) end)\n")
	b.WriteString("redis.register_function('" + quick + "', function(keys, args)\n" +
		"  quick, multi_now = true, nil\n" +
		"  local r = call(keys, args)\n" +
		"  quick = false\n" +
		"  if r[7] then return " + packLua + " end\n" +
		"  return r -- an error reply\n" +
		"end)\n")
	return fn, quick, b.String()
}
