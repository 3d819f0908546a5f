package luawire

import (
	"crypto/sha1"
	_ "embed" // base.lua
	"encoding/hex"
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

// QuickSuffix ends the name of the second function a [QuickLibrary] registers.
const QuickSuffix = "_q"

// QuickLibrary is [Library] for the scripts of the rate algorithms: besides fn, which
// follows the calling convention unchanged, the library registers quick (fn followed by
// [QuickSuffix]) for the commonest call, an "apply" of N = 1 with MaxWait 0 at the
// server's TIME: its ARGV is the config alone (the script's ARGV[5..]), and it replies the
// decision packed in one string ([ParseDecision] reads both forms). Four arguments fewer
// and one bulk string rather than an array of seven integers cost Redis about a fifth less
// per decision. The script reads its config from ARGV[C + 1] on and knows the call came
// through quick by the upvalue quick of [BaseLua], which the two functions set.
func QuickLibrary(src string) (fn, quick, lib string) { return library(src, true) }

func library(src string, withQuick bool) (fn, quick, lib string) {
	i := strings.LastIndex(src, "\n"+PerCall)
	if i < 0 {
		return "", "", ""
	}
	i++
	sum := sha1.Sum([]byte(src))
	fn = "ratekit_" + hex.EncodeToString(sum[:10])
	var b strings.Builder
	b.Grow(len(src) + 512)
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
	// An error raised by call leaves quick set: the full function clears it first.
	b.WriteString("\nend\nredis.register_function('" + fn + "', function(keys, args) quick = false return call(keys, args) end)\n")
	b.WriteString("redis.register_function('" + quick + "', function(keys, args)\n" +
		"  quick = true\n" +
		"  local r = call(keys, args)\n" +
		"  quick = false\n" +
		"  if r[7] then return spack('<Bddddddd', " + packedTagLua + ", r[1], r[2], r[3], r[4], r[5], r[6], r[7]) end\n" +
		"  return r -- an error reply\n" +
		"end)\n")
	return fn, quick, b.String()
}
