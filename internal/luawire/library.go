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
	i := strings.LastIndex(src, "\n"+PerCall)
	if i < 0 {
		return "", ""
	}
	i++
	sum := sha1.Sum([]byte(src))
	fn = "ratekit_" + hex.EncodeToString(sum[:10])
	var b strings.Builder
	b.Grow(len(src) + 256)
	b.WriteString("#!lua name=" + fn + "\n")
	b.WriteString("local KEYS, ARGV -- set by the function below on every call\n")
	b.WriteString(src[:i])
	b.WriteString("local function call(keys, args)\nKEYS, ARGV = keys, args\n")
	b.WriteString(src[i:])
	b.WriteString("\nend\nredis.register_function('" + fn + "', call)\n")
	return fn, b.String()
}
