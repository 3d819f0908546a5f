package algo

import (
	_ "embed" // the prelude every Lua twin starts with
	"strconv"
	"strings"
	"time"

	"github.com/ratekit/limiter/internal/luawire"
)

// Each algorithm's file embeds its Lua twin and builds its Script with newScript; the twin
// sits beside the Go transition it repeats. This file holds what they share.

//go:embed prelude.lua
var preludeLua string

// newScript prepends the base every script of the module shares (luawire.BaseLua: the
// time, the TTL padding and floor) and the prelude (the calling convention of lua.go and
// the helpers of algo.go: ceil_micros, floor_count, seconds, expire, ...) to body, and
// builds the same code as a Redis 7 function library (see [Script]). The state key itself
// ("") always comes first in Keys.
//
// A body may have a per-call line (luawire.PerCall) of its own: the helpers above it go
// with the prelude's, before the prelude's per-call part, so that a library makes them
// once rather than on every call; the line itself is dropped.
func newScript(name, body string, keys ...string) *Script {
	helpers, body := splitBody(body)
	preludeHelpers, preludeCall := splitPerCall(preludeLua)
	src := luawire.BaseLua + preludeHelpers + helpers + preludeCall + "\n" + peekScript(body) + body
	fn, quick, lib := luawire.QuickLibrary(src, 1+len(keys))
	return &Script{
		Name:     name,
		Source:   src,
		Keys:     append([]string{""}, keys...),
		Function: fn,
		Quick:    quick,
		Library:  lib,
		PadsTTL:  true,
	}
}

// splitPerCall splits src at its per-call line: what comes before it, and the line with
// what follows it. Without such a line everything runs per call.
func splitPerCall(src string) (helpers, perCall string) {
	i := strings.Index(src, "\n"+luawire.PerCall)
	if i < 0 {
		return "", src
	}
	return src[:i+1], src[i+1:]
}

// splitBody is splitPerCall of a twin's body, without the per-call line, which the
// prelude's comes before.
func splitBody(body string) (helpers, perCall string) {
	helpers, perCall = splitPerCall(body)
	if helpers != "" {
		perCall = perCall[strings.IndexByte(perCall, '\n')+1:]
	}
	return helpers, perCall
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

// library is luawire.Library: the FUNCTION LOAD code of src and the function it registers.
func library(src string) (fn, lib string) { return luawire.Library(src) }

// newBaseScript builds the Script of a script that is not an algorithm's decision (the
// semaphore's): body after luawire.BaseLua, as a function library too when body has a
// per-call line (luawire.PerCall). Its TTLs are padded (ttl_ms).
func newBaseScript(name, body string, keys ...string) *Script {
	src := luawire.BaseLua + body
	fn, lib := library(src)
	return &Script{Name: name, Source: src, Keys: append([]string{""}, keys...), Function: fn, Library: lib, PadsTTL: true}
}

// formatFloat formats a float argument with %.17g, which the script's tonumber reads back
// to the same float64.
func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', 17, 64) }

// micros is a window length in whole µs.
func micros(d time.Duration) int64 { return int64(d / time.Microsecond) }
