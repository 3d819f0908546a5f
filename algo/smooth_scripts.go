package algo

import (
	_ "embed" // the Lua twins of the smooth algorithms
)

// The Lua twins of SmoothBursty and SmoothWarmingUp: prelude.lua, then smooth.lua (what
// both share, as smooth.go does), then each file, which sits beside its Go transition (see
// scripts.go for the other algorithms).
var (
	//go:embed smooth.lua
	smoothLua string
	//go:embed smooth_bursty.lua
	smoothBurstyLua string
	//go:embed smooth_warming_up.lua
	smoothWarmingUpLua string

	smoothBurstyScript    = newScript(SmoothBursty{}.Name(), smoothLua+"\n"+smoothBurstyLua)
	smoothWarmingUpScript = newScript(SmoothWarmingUp{}.Name(), smoothLua+"\n"+smoothWarmingUpLua)
)

// Compile-time checks: both smooth configs are Algorithms with a Lua twin.
var (
	_ Scripted = SmoothBursty{}
	_ Scripted = SmoothWarmingUp{}
)

// Script returns the Lua twin of SmoothBursty: one hash {stored, next, rate, burst} at
// KEYS[1].
func (SmoothBursty) Script() *Script { return smoothBurstyScript }

// AppendArgs appends Rate and MaxBurstSeconds (0 sent as 1), formatted with %.17g (a +Inf
// rate as "+Inf", which the script's tonumber reads as infinity).
func (c SmoothBursty) AppendArgs(args []any) []any {
	n := c.config()
	return append(args, formatFloat(n.rate), formatFloat(n.burst))
}

// Script returns the Lua twin of SmoothWarmingUp: one hash {stored, next, rate, warmup,
// cold} at KEYS[1].
func (SmoothWarmingUp) Script() *Script { return smoothWarmingUpScript }

// AppendArgs appends Rate (%.17g, +Inf as "+Inf"), Warmup in whole µs and ColdFactor (0
// sent as 3, %.17g).
func (c SmoothWarmingUp) AppendArgs(args []any) []any {
	n := c.config()
	return append(args, formatFloat(n.rate), n.warmup, formatFloat(n.cold))
}
