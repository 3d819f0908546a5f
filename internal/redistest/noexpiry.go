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
// into a no-op, and returns c. Function libraries (FUNCTION LOAD) get the same shadow
// after their #! line. EVAL bodies get a prologue shadowing redis.call, and EVALSHA
// of an original script is pointed at its shadowed twin once the twin is known (go-redis
// sends EVAL after a NOSCRIPT, which also caches the twin on that server). Other commands,
// PEXPIRE sent directly included, are left alone.
//
// On a Cluster client the hook also goes on every node client (the store loads function
// libraries through the node that owns a key), so call it before c's first command.
func WithoutExpiry[C redis.UniversalClient](c C) C {
	h := &noExpiry{}
	c.AddHook(h)
	if cc, ok := any(c).(*redis.ClusterClient); ok {
		cc.OnNewNode(func(node *redis.Client) { node.AddHook(h) })
	}
	return c
}

// noExpiry is the hook of WithoutExpiry.
type noExpiry struct {
	shas sync.Map // SHA-1 of an original script → SHA-1 of its rewritten twin
}

// shadow replaces the global redis table, for the rest of the script, by one whose call
// ignores PEXPIRE. The initializer still sees the global redis.
const shadow = "local redis = setmetatable({call = function(cmd, ...) " +
	"if cmd == 'PEXPIRE' then return 1 end return redis.call(cmd, ...) end}, {__index = redis})\n"

// libShadow is shadow for a function library (FUNCTION LOAD). A library loads without
// setmetatable and with a redis table that lacks call, so the shadow is a plain table whose
// functions look up the global redis when they run; it keeps register_function for the
// load and the error_reply the scripts use.
const libShadow = "local redis = {call = function(cmd, ...) " +
	"if cmd == 'PEXPIRE' then return 1 end return redis.call(cmd, ...) end, " +
	"error_reply = function(...) return redis.error_reply(...) end, " +
	"register_function = redis.register_function}\n"

func (h *noExpiry) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *noExpiry) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.rewrite(cmd)
		return next(ctx, cmd)
	}
}

func (h *noExpiry) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.rewrite(cmd)
		}
		return next(ctx, cmds)
	}
}

// rewrite points EVALSHA at the rewritten twin once it is known, and turns EVAL of an
// original script (the store's answer to NOSCRIPT) into EVAL of its twin.
func (h *noExpiry) rewrite(cmd redis.Cmder) {
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
		// FUNCTION LOAD [REPLACE] code: the shadow goes right after the #! line, so the
		// library's functions, under their own names, never set a TTL.
		last := len(args) - 1
		code, ok := args[last].(string)
		if len(args) < 3 || !strings.EqualFold(fmt.Sprint(args[1]), "load") || !ok || !strings.HasPrefix(code, "#!") {
			return
		}
		if i := strings.IndexByte(code, '\n'); i >= 0 && !strings.HasPrefix(code[i+1:], libShadow) {
			args[last] = code[:i+1] + libShadow + code[i+1:]
		}
	case "evalsha":
		if twin, ok := h.shas.Load(body); ok {
			args[1] = twin
		}
	case "eval":
		if strings.HasPrefix(body, shadow) {
			return
		}
		twin := shadow + body
		h.shas.Store(redis.NewScript(body).Hash(), redis.NewScript(twin).Hash())
		args[1] = twin
	}
}
