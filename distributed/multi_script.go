package distributed

import (
	_ "embed" // the composite driver
	"strconv"
	"strings"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/luawire"
)

//go:embed multi.lua
var multiDriverLua string

// multiSource builds the composite script of defs, one per rule in order (see multi.lua):
// the base (luawire.BaseLua), one local function per distinct script, wrapping its whole
// source, then RULES and NKEYS, then the driver, which ends with `return serve(call)`: the
// module's composition rule (luawire.Composed), so it loads as a function library too.
//
// Wrapping is sound because a script, as algo.Script requires, is a plain Lua chunk that
// reads its keys and arguments only through KEYS and ARGV (now parameters of the function,
// which shadow the globals), declares only locals (Redis forbids globals), and returns
// from its top level; the function body is that chunk unchanged, so its locals (the
// prelude's helpers included) stay private to each rule. The function is variadic so that
// a chunk using "..." still compiles. A script must not start with a "#!lua" shebang, which
// only the first line of a whole script may carry.
func multiSource(defs []*algo.Script) string {
	var b strings.Builder
	b.WriteString(luawire.BaseLua)
	b.WriteString("-- limiter composite: ")
	fn := make(map[*algo.Script]int, len(defs))
	src := make(map[string]int, len(defs))
	idx := make([]int, len(defs))
	for i, d := range defs {
		if i > 0 {
			b.WriteString(" + ")
		}
		b.WriteString(d.Name)
	}
	b.WriteString("\n")
	next := 0
	for i, d := range defs {
		if k, ok := fn[d]; ok {
			idx[i] = k
			continue
		}
		if k, ok := src[d.Source]; ok {
			fn[d], idx[i] = k, k
			continue
		}
		next++
		fn[d], src[d.Source], idx[i] = next, next, next
		b.WriteString("local rule_fn_")
		b.WriteString(strconv.Itoa(next))
		b.WriteString(" = function(KEYS, ARGV, ...)\n")
		b.WriteString(d.Source)
		b.WriteString("\nend\n")
	}
	b.WriteString("local RULES = {")
	for i, k := range idx {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("rule_fn_")
		b.WriteString(strconv.Itoa(k))
	}
	b.WriteString("}\nlocal NKEYS = {")
	for i, d := range defs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(len(d.Keys)))
	}
	b.WriteString("}\n")
	b.WriteString(multiDriverLua)
	return b.String()
}
