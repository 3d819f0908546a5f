package algo

import (
	_ "embed" // the prelude every Lua twin starts with
	"strconv"
	"time"

	"github.com/ratekit/limiter/internal/luawire"
)

// Each algorithm's file embeds its Lua twin and builds its Script with newScript; the twin
// sits beside the Go transition it repeats. This file holds what they share.

//go:embed prelude.lua
var preludeLua string

// newScript builds an algorithm's Script. Its Source is the concatenation, in order, of
// whole files: the base every script of the module starts with (luawire.BaseLua: the
// time, the TTL padding and floor, serve), the prelude (prelude.lua: the calling
// convention of lua.go and the helpers of algo.go: ceil_micros, floor_count, seconds,
// expire, ..., and twin) and body, the algorithm's file (or files, joined by a newline:
// smooth.lua and a variant's). Every file only
// defines local constants and functions, except the last, whose last statement is
// `return serve(twin(decide))`: decide, the algorithm's transition, decides one call from
// the values twin decodes. That is the module's composition rule (luawire.Composed): the
// Redis store can send such a script as it is, or load it once as a Redis 7 function
// library. The state key itself ("") always comes first in Keys.
func newScript(name, body string, keys ...string) *Script {
	src := luawire.BaseLua + preludeLua + body
	return &Script{Name: name, Source: src, Keys: append([]string{""}, keys...)}
}

// newBaseScript builds the Script of a script that is not a rate algorithm's decision
// (the semaphore's): the base (luawire.BaseLua), then body, which ends with
// `return serve(call)`; the same composition rule as newScript, without the prelude.
func newBaseScript(name, body string, keys ...string) *Script {
	return &Script{Name: name, Source: luawire.BaseLua + body, Keys: append([]string{""}, keys...)}
}

// formatFloat formats a float argument with %.17g, which the script's tonumber reads back
// to the same float64.
func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', 17, 64) }

// micros is a window length in whole µs.
func micros(d time.Duration) int64 { return int64(d / time.Microsecond) }
