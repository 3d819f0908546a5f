package algo

import (
	_ "embed" // the Lua twins
	"strconv"
	"time"
)

// The Lua twins. Each script is prelude.lua (the calling convention of lua.go and the
// helpers of algo.go: ceil_micros, floor_count, seconds, expire, ...) followed by the
// algorithm's own file, which sits beside its Go transition.
var (
	//go:embed prelude.lua
	preludeLua string
	//go:embed fixed_window.lua
	fixedWindowLua string
	//go:embed sliding_window_log.lua
	slidingWindowLogLua string
	//go:embed sliding_window_counter.lua
	slidingWindowCounterLua string
	//go:embed token_bucket.lua
	tokenBucketLua string
	//go:embed leaky_bucket.lua
	leakyBucketLua string
	//go:embed gcra.lua
	gcraLua string
)

// The scripts, built once: Script returns the same pointer on every call, so a store can
// key its cache of loaded SHA1s by it.
var (
	fixedWindowScript          = newScript(FixedWindow{}.Name(), fixedWindowLua)
	slidingWindowLogScript     = newScript(SlidingWindowLog{}.Name(), slidingWindowLogLua, logKeySuffix)
	slidingWindowCounterScript = newScript(SlidingWindowCounter{}.Name(), slidingWindowCounterLua)
	tokenBucketScript          = newScript(TokenBucket{}.Name(), tokenBucketLua)
	leakyBucketScript          = newScript(LeakyBucket{}.Name(), leakyBucketLua)
	gcraScript                 = newScript(GCRA{}.Name(), gcraLua)
)

// logKeySuffix names the list that holds a sliding log's entries, beside its hash.
const logKeySuffix = ":log"

// newScript prepends the prelude to body. The state key itself ("") always comes first.
func newScript(name, body string, keys ...string) *Script {
	return &Script{
		Name:   name,
		Source: preludeLua + "\n" + body,
		Keys:   append([]string{""}, keys...),
	}
}

// Compile-time checks: every config struct has a Lua twin.
var (
	_ Scripted = FixedWindow{}
	_ Scripted = SlidingWindowLog{}
	_ Scripted = SlidingWindowCounter{}
	_ Scripted = TokenBucket{}
	_ Scripted = LeakyBucket{}
	_ Scripted = GCRA{}
)

// formatFloat formats a float argument with %.17g, which the script's tonumber reads back
// to the same float64.
func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', 17, 64) }

// micros is a window length in whole µs.
func micros(d time.Duration) int64 { return int64(d / time.Microsecond) }

// Script returns the Lua twin of FixedWindow: one hash {win, count} at KEYS[1].
func (FixedWindow) Script() *Script { return fixedWindowScript }

// AppendArgs appends Limit and the Window in µs.
func (c FixedWindow) AppendArgs(args []any) []any {
	return append(args, c.Limit, micros(c.Window))
}

// Script returns the Lua twin of SlidingWindowLog: a hash {total} at KEYS[1] and the list
// of "T:N" entries, oldest first, at KEYS[2] (the state key followed by ":log").
func (SlidingWindowLog) Script() *Script { return slidingWindowLogScript }

// AppendArgs appends Limit and the Window in µs.
func (c SlidingWindowLog) AppendArgs(args []any) []any {
	return append(args, c.Limit, micros(c.Window))
}

// Script returns the Lua twin of SlidingWindowCounter: one hash {win, curr, prev} at KEYS[1].
func (SlidingWindowCounter) Script() *Script { return slidingWindowCounterScript }

// AppendArgs appends Limit and the Window in µs.
func (c SlidingWindowCounter) AppendArgs(args []any) []any {
	return append(args, c.Limit, micros(c.Window))
}

// Script returns the Lua twin of TokenBucket: one hash {tokens, last} at KEYS[1].
func (TokenBucket) Script() *Script { return tokenBucketScript }

// AppendArgs appends Rate (formatted with %.17g) and Burst.
func (c TokenBucket) AppendArgs(args []any) []any {
	return append(args, formatFloat(c.Rate), c.Burst)
}

// Script returns the Lua twin of LeakyBucket: one hash {level, last} at KEYS[1].
func (LeakyBucket) Script() *Script { return leakyBucketScript }

// AppendArgs appends Rate (formatted with %.17g) and Capacity.
func (c LeakyBucket) AppendArgs(args []any) []any {
	return append(args, formatFloat(c.Rate), c.Capacity)
}

// Script returns the Lua twin of GCRA: one hash {tat} at KEYS[1].
func (GCRA) Script() *Script { return gcraScript }

// AppendArgs appends Rate (formatted with %.17g) and Burst.
func (c GCRA) AppendArgs(args []any) []any {
	return append(args, formatFloat(c.Rate), c.Burst)
}
