package algo

import (
	_ "embed" // the prelude every Lua twin starts with
	"strconv"
	"time"
)

// Each algorithm's file embeds its Lua twin and builds its Script with newScript; the twin
// sits beside the Go transition it repeats. This file holds what they share.

//go:embed prelude.lua
var preludeLua string

// newScript prepends the prelude (the calling convention of lua.go and the helpers of
// algo.go: ceil_micros, floor_count, seconds, expire, ...) to body. The state key itself
// ("") always comes first in Keys.
func newScript(name, body string, keys ...string) *Script {
	return &Script{
		Name:   name,
		Source: preludeLua + "\n" + body,
		Keys:   append([]string{""}, keys...),
	}
}

// formatFloat formats a float argument with %.17g, which the script's tonumber reads back
// to the same float64.
func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', 17, 64) }

// micros is a window length in whole µs.
func micros(d time.Duration) int64 { return int64(d / time.Microsecond) }
