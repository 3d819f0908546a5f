package redistest

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Fake clocks and real TTLs.
//
// A store built with a fake clock decides at the fake clock's instants, but Redis expires
// keys on its own clock: a state whose ResetAfter is 7µs of fake time gets a PEXPIRE of
// 1 ms of real time, and if the test takes longer than that before the fake clock moves
// on, Redis deletes a state that, at the fake instant, still holds grants. Suites that
// drive fake clocks therefore run on clients hooked by WithoutExpiry: it makes every
// script's PEXPIRE a no-op, on the server and inside the script's atomic run. That is
// transparent to the decisions, because a state left in place after its ResetAfter decides
// exactly like a fresh one (the Go transitions rely on the same property). The TTLs
// themselves must be tested separately, on unhooked clients.

// WithoutExpiry installs on c a go-redis hook that runs every script with PEXPIRE turned
// into a no-op and "SET key value PX ms" into "SET key value" (ShadowScripts with shadow and libShadow), and returns c. Other commands,
// PEXPIRE sent directly included, are left alone.
//
// On a Cluster client the hook also goes on every node client (the store loads function
// libraries through the node that owns a key), so call it before c's first command.
func WithoutExpiry[C redis.UniversalClient](c C) C { return ShadowScripts(c, shadow, libShadow) }

// ShadowScripts installs on c a go-redis hook that runs every script after a Lua
// prologue, and returns c: EVAL (and EVAL_RO) bodies get evalShadow in front, and
// EVALSHA of an original script is pointed at its shadowed twin once the twin is known
// (go-redis sends EVAL after a NOSCRIPT, which also caches the twin on that server).
// Function libraries (FUNCTION LOAD) get libShadow right after their #! line; with
// libShadow "" they are left alone. A prologue typically shadows redis.call (see shadow).
//
// On a Cluster client the hook also goes on every node client, as WithoutExpiry says.
func ShadowScripts[C redis.UniversalClient](c C, evalShadow, libShadow string) C {
	h := &scriptShadow{eval: evalShadow, lib: libShadow}
	c.AddHook(h)
	if cc, ok := any(c).(*redis.ClusterClient); ok {
		cc.OnNewNode(func(node *redis.Client) { node.AddHook(h) })
	}
	return c
}

// scriptShadow is the hook of ShadowScripts.
type scriptShadow struct {
	eval, lib string
	shas      sync.Map // SHA-1 of an original script → SHA-1 of its shadowed twin
}

// shadow replaces the global redis table, for the rest of the script, by one whose call
// ignores PEXPIRE. The initializer still sees the global redis.
const shadow = "local redis = setmetatable({call = function(cmd, ...) " +
	"if cmd == 'PEXPIRE' then return 1 end " + noPX + "return redis.call(cmd, ...) end}, {__index = redis})\n"

// noPX is the part of shadow that drops the TTL of "SET key value PX ms", the write of the
// algorithms' compact state (internal/luawire/base.lua, put_state).
const noPX = "if cmd == 'SET' then local k, v, px = ...; if px == 'PX' then return redis.call(cmd, k, v) end end "

// libShadow is shadow for a function library (FUNCTION LOAD). A library loads without
// setmetatable and with a redis table that lacks call, so the shadow is a plain table whose
// functions look up the global redis when they run; it keeps register_function for the
// load and the error_reply the scripts use.
const libShadow = "local redis = {call = function(cmd, ...) " +
	"if cmd == 'PEXPIRE' then return 1 end " + noPX + "return redis.call(cmd, ...) end, " +
	"pcall = function(...) return redis.pcall(...) end, " +
	"error_reply = function(...) return redis.error_reply(...) end, " +
	"register_function = redis.register_function}\n"

func (h *scriptShadow) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *scriptShadow) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.rewrite(cmd)
		return next(ctx, cmd)
	}
}

func (h *scriptShadow) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.rewrite(cmd)
		}
		return next(ctx, cmds)
	}
}

// rewrite points EVALSHA at the shadowed twin once it is known, turns EVAL of an original
// script (the store's answer to NOSCRIPT) into EVAL of its twin, and puts h.lib into
// FUNCTION LOAD.
func (h *scriptShadow) rewrite(cmd redis.Cmder) {
	args := cmd.Args() // the command's own slice: changes are sent
	if len(args) < 2 {
		return
	}
	body, ok := args[1].(string)
	if !ok {
		return
	}
	switch strings.ToLower(cmd.Name()) {
	case "function":
		if h.lib == "" {
			return
		}
		// FUNCTION LOAD [REPLACE] code: the shadow goes right after the #! line, so the
		// library's functions, under their own names, run behind it.
		last := len(args) - 1
		code, ok := args[last].(string)
		if len(args) < 3 || !strings.EqualFold(fmt.Sprint(args[1]), "load") || !ok || !strings.HasPrefix(code, "#!") {
			return
		}
		if i := strings.IndexByte(code, '\n'); i >= 0 && !strings.HasPrefix(code[i+1:], h.lib) {
			args[last] = code[:i+1] + h.lib + code[i+1:]
		}
	case "evalsha", "evalsha_ro":
		if twin, ok := h.shas.Load(body); ok {
			args[1] = twin
		}
	case "eval", "eval_ro":
		if strings.HasPrefix(body, h.eval) {
			return
		}
		twin := h.eval + body
		h.shas.Store(redis.NewScript(body).Hash(), redis.NewScript(twin).Hash())
		args[1] = twin
	}
}
