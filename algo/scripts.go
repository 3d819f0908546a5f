package algo

import (
	"crypto/sha1"
	_ "embed" // the prelude every Lua twin starts with
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// Each algorithm's file embeds its Lua twin and builds its Script with newScript; the twin
// sits beside the Go transition it repeats. This file holds what they share.

//go:embed prelude.lua
var preludeLua string

// newScript prepends the prelude (the calling convention of lua.go and the helpers of
// algo.go: ceil_micros, floor_count, seconds, expire, ...) to body, and builds the same
// code as a Redis 7 function library (see [Script]). The state key itself ("") always
// comes first in Keys.
func newScript(name, body string, keys ...string) *Script {
	src := preludeLua + "\n" + peekScript(body) + body
	fn, lib := library(src)
	return &Script{
		Name:     name,
		Source:   src,
		Keys:     append([]string{""}, keys...),
		Function: fn,
		Library:  lib,
		PadsTTL:  true,
	}
}

// peekScript returns the code a script runs in "peek" mode, before body: body twice as a
// function of n, whose writes the prelude skips, once for the request and once for more
// than any limit, whose Remaining (what is available now) the peek replies, as [Peek]
// does in Go. A copy of body rather than a wrapper around it keeps "apply" free of a
// closure per call; peeks are for operators.
func peekScript(body string) string {
	return "if is_peek then\nlocal function decide(n)\n" + body +
		"\nend\nreturn peeked(decide(n), decide(MAX_EXACT + 2))\nend\n"
}

// perCall is the line of prelude.lua after which everything runs on every call.
const perCall = "-- ---- per call:"

// library returns the FUNCTION LOAD code of src, a script made of the prelude and a body,
// and the name of the one function it registers (the library has the same name). The
// prelude's helpers run once, when the library loads; the function runs the rest, from
// the per-call line on, with KEYS and ARGV taken from its arguments. The name carries the
// SHA-1 of src, so that two versions of a script never share a name: a server holding an
// older library beside a newer one runs each client's own. It returns "", "" when src has
// no per-call line (not a script of this package).
func library(src string) (fn, lib string) {
	i := strings.Index(src, perCall)
	if i < 0 {
		return "", ""
	}
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

// formatFloat formats a float argument with %.17g, which the script's tonumber reads back
// to the same float64.
func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', 17, 64) }

// micros is a window length in whole µs.
func micros(d time.Duration) int64 { return int64(d / time.Microsecond) }
