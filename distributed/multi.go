package distributed

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/luawire"
	"github.com/ratekit/limiter/internal/storecheck"
	"github.com/ratekit/limiter/store"
)

var _ store.MultiApplier = (*Store)(nil)

// ApplyAll answers req for key under every rule in one script, all or nothing: the grants
// are kept only when every rule grants. See store.MultiApplier.
//
// Every state key of one user key carries the same hash tag, so the script touches one
// Cluster slot and runs atomically on the server that owns it, in one round trip (two when
// the server has lost the script). It runs each rule's own Lua twin, wrapped as a function,
// on a snapshot-and-restore basis: before any rule runs, every key of every rule is saved
// with DUMP and PTTL; if a rule denies, each is put back (RESTORE ... REPLACE with its
// remaining TTL, or DEL if it did not exist), so nothing is consumed. The rules all see one
// instant: the server's TIME read once, or the WithClientClock time. A rule whose script fails
// (a key holding other data, a Lua error) rolls the others back too, and the call returns
// an error wrapping store.ErrUnavailable.
//
// The composite script of each sequence of algorithm names is built once and cached (up
// to 256 distinct sequences per process; beyond that each call builds its own).
func (s *Store) ApplyAll(ctx context.Context, key string, rules []algo.Algorithm, req algo.Request) ([]algo.Decision, bool, error) {
	if err := storecheck.ApplyAll(key, rules, req); err != nil {
		return nil, false, err
	}
	if s.closed.Load() {
		return nil, false, store.ErrClosed
	}
	if err := storecheck.Context(ctx); err != nil {
		return nil, false, err
	}
	if len(rules) == 1 {
		d, err := s.Apply(ctx, key, rules[0], req)
		if err != nil {
			return nil, false, err
		}
		return []algo.Decision{d}, d.Allowed, nil
	}
	defs := make([]*algo.Script, len(rules))
	// An apply's own ARGV without config (see multi.lua), then each rule's config; ARGV[2]
	// is set once every rule's script is known (the TTL padding needs all of them to read it).
	encode := luawire.Apply
	if req.Charge {
		encode = luawire.Charge
	}
	args := encode(make([]any, 0, 4+4*len(rules)), luawire.ServerTime, req.N, req.MaxWait, nil)
	keys := make([]string, 0, 2*len(rules))
	pads := true
	for i, a := range rules {
		sa, e, slot, err := s.script(a)
		if err != nil {
			return nil, false, fmt.Errorf("rule %d: %w", i+1, err)
		}
		defs[i] = e.def
		pads = pads && e.pads
		keys = appendStateKeys(keys, s.prefix, key, slot, e.def.Keys)
		at := len(args)
		args = sa.AppendArgs(append(args, 0))
		args[at] = len(args) - at - 1
	}
	now, nowArg, err := s.now(pads)
	if err != nil {
		return nil, false, err
	}
	args[1] = nowArg // see clock.go
	reply, err := s.exec(ctx, multiScriptFor(defs), keys, args)
	if err != nil {
		return nil, false, s.callFailed(ctx, composite(rules, key), keys, err)
	}
	ds, ok, err := parseMulti(reply, len(rules))
	if err != nil {
		return nil, false, badReply(composite(rules, key), err)
	}
	if err := s.finished(now); err != nil {
		return nil, false, err
	}
	return ds, ok, nil
}

// parseMulti reads the reply of a composite script: each rule's "apply" reply (seven
// integers, see luawire.ParseDecision) followed by the all-or-nothing flag, which must say
// whether every rule allowed.
func parseMulti(reply any, rules int) ([]algo.Decision, bool, error) {
	vals, ok := reply.([]any)
	if !ok || len(vals) != 7*rules+1 {
		return nil, false, &luawire.ReplyError{Reply: reply, Problem: fmt.Sprintf("want an array of %d integers", 7*rules+1)}
	}
	ds := make([]algo.Decision, rules)
	all := true
	for i := range ds {
		d, err := luawire.ParseDecision(vals[7*i : 7*i+7])
		if err != nil {
			return nil, false, fmt.Errorf("rule %d: %w", i+1, err)
		}
		ds[i], all = algo.Decision(d), all && d.Allowed
	}
	flag, ok := vals[7*rules].(int64)
	if !ok || (flag != 0 && flag != 1) || (flag == 1) != all {
		return nil, false, &luawire.ReplyError{Reply: vals[7*rules], Problem: "the flag disagrees with the rules' decisions"}
	}
	return ds, all, nil
}

// composite names a composite call for an error message: its rules' algorithm names and
// the user key.
func composite(rules []algo.Algorithm, key string) string {
	n := make([]string, len(rules))
	for i, a := range rules {
		n[i] = a.Name()
	}
	return "composite of " + strings.Join(n, "+") + " on key " + quoteKey(key)
}

// multiScript is the composite script of one sequence of algorithm scripts.
type multiScript struct {
	defs []*algo.Script
	e    *scriptEntry
}

// maxMultiScripts bounds the cache of composite scripts against a program that builds
// composites without end; real programs use a handful.
const maxMultiScripts = 256

var (
	multiScripts     sync.Map // names joined by NUL → *multiScript
	multiScriptCount atomic.Int64
)

// multiScriptFor returns the composite script of defs, from the cache when the same
// sequence of scripts was seen before. A cached composite also comes as a function
// library (see transport.go), loaded once per server; one that is not cached is sent with
// EVALSHA, so that a program building composites without end does not fill the servers'
// function libraries, which Redis never evicts.
func multiScriptFor(defs []*algo.Script) *scriptEntry {
	var b strings.Builder
	for i, d := range defs {
		if i > 0 {
			b.WriteByte(0)
		}
		b.WriteString(d.Name)
	}
	id := b.String()
	if v, ok := multiScripts.Load(id); ok {
		if m := v.(*multiScript); sameScripts(m.defs, defs) {
			return m.e
		}
		// Another algorithm with the same names but other sources: build, don't cache.
		return newEntry(&algo.Script{Name: "composite", Source: multiSource(defs)}, formEval)
	}
	if multiScriptCount.Load() >= maxMultiScripts {
		return newEntry(&algo.Script{Name: "composite", Source: multiSource(defs)}, formEval)
	}
	src := multiSource(defs)
	m := &multiScript{defs: defs, e: newEntry(&algo.Script{Name: "composite", Source: src}, formLibrary)}
	if v, loaded := multiScripts.LoadOrStore(id, m); loaded {
		m = v.(*multiScript)
		if !sameScripts(m.defs, defs) {
			return newEntry(&algo.Script{Name: "composite", Source: src}, formEval)
		}
		return m.e
	}
	multiScriptCount.Add(1)
	return m.e
}

func sameScripts(a, b []*algo.Script) bool {
	for i := range a {
		if a[i] != b[i] && (a[i].Source != b[i].Source || len(a[i].Keys) != len(b[i].Keys)) {
			return false
		}
	}
	return true
}
