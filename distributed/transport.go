package distributed

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/luawire"
)

// The transport: every script the store runs (an algorithm's apply, refund and peek, a
// composite of ApplyAll, Reset's DEL, the semaphore's operations) goes to Redis through
// exec, the one place that chooses how it is sent and recovers a script the server lost.
//
//   - How it is named: FCALL of the function library newEntry builds from the script's
//     source when the script follows the module's composition rule (luawire.Composed)
//     and the server has functions; EVALSHA otherwise. No probe
//     is sent ahead of the calls: the first FCALL is the probe.
//   - How it travels: alone, within the store's timeout and guard (bounded.go); in the
//     next pipeline with WithBatching (batch.go); or, under WithReplicaAck, in a pipeline
//     with WAIT on the connection of the key's master (replica.go).
//   - What a lost script costs: a server that does not have the function (never loaded,
//     restarted, failed over to a replica that lacks it, FUNCTION FLUSH; on a Cluster each
//     node has its own) answers "Function not found", and the call goes again with
//     FUNCTION LOAD before it, on the key's node, in one pipeline; a server that lost the
//     script answers NOSCRIPT, and the call goes again as EVAL, which also caches it. A
//     server without functions (Redis before 7: FCALL is an unknown command) or a user the
//     ACL denies them makes the store send EVALSHA from then on, for every call and node.
//     Neither error means the script ran, so sending it again cannot apply it twice.

// scriptEntry is one script as the transport sends it: its source, SHA-1 and, when it
// goes as a function library, the library and its functions.
type scriptEntry struct {
	def *algo.Script
	sha string // SHA-1 of def.Source, for EVALSHA
	// lib is the FUNCTION LOAD code of def.Source ("" for a script sent with EVALSHA only).
	lib string
	// pads: the script reads ARGV[2] as "now pad" too (luawire.Composed), so a client clock
	// sends it its tolerance (clock.go).
	pads bool
	// fn, shaArg and src are the library's function, sha and def.Source as command
	// arguments, boxed once: a string stored in an interface is an allocation per call
	// otherwise. quick, multi and charges are the library's quick, multi and charge-multi
	// functions so boxed (luawire.RateLibrary; batch_multi.go); nil when it has none.
	fn, shaArg, src, quick, multi, charges any
	// cfg caches the config arguments (AppendArgs) of the last algorithm of package algo
	// run with this script, so that a limiter's calls format and box them once.
	cfg atomic.Pointer[configArgs]
}

// form is how the transport may send a script: what it knows of the script beyond its
// source, since algo.Script says nothing about how it is sent.
type form uint8

const (
	// formEval: with EVALSHA (and EVAL) only.
	formEval form = iota
	// formLibrary: as a function library (FCALL) when the script is luawire.Composed and
	// the server has functions, else as formEval.
	formLibrary
	// formRate: formLibrary, for a rate algorithm's script (it answers algo.Script's
	// calling convention), whose library also has the quick and multi functions
	// (luawire.RateLibrary).
	formRate
)

// newEntry decides how def is sent, once per script: see form. A script that does not
// follow the module's composition rule (luawire.Composed: a custom algorithm's) is sent
// with EVALSHA whatever f says, and with a plain now.
func newEntry(def *algo.Script, f form) *scriptEntry {
	sum := sha1.Sum([]byte(def.Source))
	sha := hex.EncodeToString(sum[:])
	e := &scriptEntry{def: def, sha: sha, shaArg: sha, src: def.Source, pads: luawire.Composed(def.Source)}
	if !e.pads {
		return e
	}
	switch f {
	case formLibrary:
		fn, lib := luawire.Library(def.Source)
		e.fn, e.lib = fn, lib
	case formRate:
		fn, quick, multi, lib := luawire.RateLibrary(def.Source, len(def.Keys))
		e.fn, e.quick, e.multi, e.charges, e.lib = fn, quick, multi, fn+luawire.ChargeSuffix, lib
	}
	return e
}

// step is how a call is sent next.
type step uint8

const (
	stepFCALL   step = iota // FCALL function
	stepLoad                // FUNCTION LOAD REPLACE, then FCALL, on the key's node
	stepEVALSHA             // EVALSHA sha
	stepEVAL                // EVAL source
)

// maxRounds bounds the sends of one call: a lost function costs FCALL then LOAD+FCALL, a
// server without functions FCALL, EVALSHA, EVAL; a Cluster slot moving under a load one
// more.
const maxRounds = 4

// The states of a batched call. A call is owned by its caller until it is queued; from
// then on exactly one of two parties puts it back in the pool: the caller, once it has
// read its answer (the flusher moved it waiting → answered and signalled ready), or the
// flusher, when the caller gave up first (the caller moved it waiting → abandoned and left).
const (
	callWaiting int32 = iota
	callAnswered
	callAbandoned
)

// call is one script call on its way to Redis. Calls are pooled: a decision allocates
// none of this.
type call struct {
	args []any // the whole command: FCALL fn (or EVALSHA sha, EVAL src), numkeys, KEYS..., ARGV...
	e    *scriptEntry
	step step
	cmd  *redis.Cmd
	// quick: args is FCALL of the script's quick function (luawire.RateLibrary), whose
	// ARGV is the config alone; expand turns it back into the full convention.
	quick bool
	// charge: args is a "charge" at the server's TIME (luawire.Charge), which a batch
	// may send in a group of the script's charge-multi function (batch_multi.go).
	charge bool

	// Batching (batch.go).
	deadline time.Time // the call's deadline (Store.bound); zero for none
	reply    any
	err      error
	state    atomic.Int32
	ready    chan struct{} // capacity 1: the flusher's one signal that reply and err are set
}

var callPool = sync.Pool{New: func() any {
	return &call{args: make([]any, 0, 16), ready: make(chan struct{}, 1)}
}}

// newCall returns a pooled call of e's script on keys with argv, both copied: the caller
// may reuse them as soon as newCall returns. An "apply" of N = 1 with MaxWait 0 at the
// server's TIME goes to the script's quick function when it has one, with the config
// alone as ARGV.
func (s *Store) newCall(e *scriptEntry, keys []string, argv []any) *call {
	c := callPool.Get().(*call)
	c.e = e
	c.args = append(c.args, nil, nil, len(keys))
	for _, k := range keys {
		c.args = append(c.args, k)
	}
	functions := e.lib != "" && !s.evalOnly.Load()
	if functions && e.quick != nil && quickArgs(argv) {
		c.quick = true
		c.args = append(c.args, argv[len(quickHead):]...)
	} else {
		c.charge = functions && e.charges != nil && chargeArgs(argv)
		c.args = append(c.args, argv...)
	}
	if functions {
		c.to(stepFCALL)
	} else {
		c.to(stepEVALSHA)
	}
	return c
}

// quickHead is the head of the ARGV of the call a quick function answers, "apply" at the
// server's TIME of N = 1 with MaxWait 0, as luawire.Apply encodes it: what a quick call
// leaves out.
var quickHead = luawire.Apply(nil, luawire.ServerTime, 1, 0, nil)

// quickArgs reports the ARGV of the call a quick function answers (see quickHead).
func quickArgs(argv []any) bool {
	if len(argv) < len(quickHead) {
		return false
	}
	for i, h := range quickHead {
		if argv[i] != h {
			return false
		}
	}
	return true
}

// chargeArgs reports the ARGV of a charge at the server's TIME (luawire.Charge with
// luawire.ServerTime): what a charge group may carry (see batch_multi.go).
func chargeArgs(argv []any) bool {
	return len(argv) >= 4 && argv[0] == "charge" && argv[1] == "" && argv[3] == 0
}

// expand turns a quick call back into one of the full calling convention: the four
// arguments quick left out go back after the keys.
func (c *call) expand() {
	if !c.quick {
		return
	}
	c.quick = false
	at := 3 + c.args[2].(int) // after the command, its name, numkeys and the keys
	c.args = slices.Insert(c.args, at, quickHead...)
}

func putCall(c *call) {
	clear(c.args)
	c.args = c.args[:0]
	c.e, c.deadline, c.cmd, c.reply, c.err, c.quick, c.charge = nil, time.Time{}, nil, nil, nil, false, false
	c.state.Store(callWaiting)
	callPool.Put(c)
}

// to sets how c is sent next.
func (c *call) to(st step) {
	c.step = st
	switch st {
	case stepFCALL, stepLoad:
		c.args[0], c.args[1] = "fcall", c.e.fn
		if c.quick {
			c.args[1] = c.e.quick
		}
	case stepEVALSHA:
		c.expand() // a plain script takes the full convention
		c.args[0], c.args[1] = "evalsha", c.e.shaArg
	case stepEVAL:
		c.expand()
		c.args[0], c.args[1] = "eval", c.e.src
	}
}

// command returns a new command for c as it stands, kept in c.cmd.
func (c *call) command(ctx context.Context) *redis.Cmd {
	c.cmd = redis.NewCmd(ctx, c.args...)
	c.cmd.SetFirstKeyPos(3) // KEYS start at the fourth argument, as Cluster routing needs
	return c.cmd
}

// firstKey is the call's first key, which names the server that owns all of them.
func (c *call) firstKey() string { return c.args[3].(string) }

// exec runs e's script on keys with argv and returns its reply by the call's deadline,
// which it sets first (Store.bound: the store's timeout, or ctx's earlier deadline),
// whatever the client's options (see guard): on its own, or, while other calls are in
// flight and batching is on, in the next pipeline. keys and
// argv are copied: the caller may reuse them when exec returns.
func (s *Store) exec(ctx context.Context, e *scriptEntry, keys []string, argv []any) (any, error) {
	ctx, cancel := s.bound(ctx) // the call's one deadline (deadline.go)
	if cancel != nil {
		defer cancel()
	}
	c := s.newCall(e, keys, argv)
	if s.batch != nil {
		if !s.batch.alone() {
			return s.batch.do(ctx, c) // the batcher owns c from here on
		}
		// Nothing in flight: no one to share a round trip with, so the call goes on its
		// own, exactly as without batching, holding the batcher's slot meanwhile.
		defer s.batch.done()
	}
	if s.guard.inline {
		reply, err := s.send(ctx, c)
		putCall(c)
		return reply, err
	}
	reply, err, left := s.guard.do(ctx, func(ctx context.Context) (any, error) {
		return s.send(ctx, c)
	}, func() { putCall(c) })
	if !left { // else the call still running owns c
		putCall(c)
	}
	return reply, err
}

// send sends one call, again as recover says until it succeeds or cannot be recovered.
func (s *Store) send(ctx context.Context, c *call) (any, error) {
	for round := 1; ; round++ {
		var reply any
		var err error
		if c.step == stepLoad || s.ack != nil {
			reply, err = s.sendOnNode(ctx, c)
		} else {
			_ = s.client.Process(ctx, c.command(ctx))
			reply, err = c.cmd.Result()
		}
		if round == maxRounds || !s.recover(c, err, nil) {
			return reply, err
		}
	}
}

// sendBatch sends calls as one pipeline, sends again those recover says how to, and
// leaves each call's reply and error in it.
//
// After NOSCRIPT, the first call of each script goes as EVAL, which runs and caches it,
// followed by the others as EVALSHA: on one server, commands of one pipeline run in
// order, so they find the script cached; on a Cluster, those routed to another node meet
// NOSCRIPT again and go in the next round. A missing function is loaded likewise, once
// per script and round, before the pipeline. Sending the source or the library only where
// needed keeps a cold start from shipping it once per command.
//
// On one server, the quick calls of one script and config go as one command (see
// batch_multi.go).
func (s *Store) sendBatch(ctx context.Context, pipe redis.Pipeliner, calls []*call) {
	live := calls
	for r := (round{n: 1}); len(live) > 0; r.n++ {
		var groups []*group
		if s.multiOK() {
			groups, live = groupCalls(live)
		}
		for _, c := range live {
			if c.step == stepLoad {
				c.reply, c.err = s.sendOnNode(ctx, c)
				continue
			}
			_ = pipe.Process(ctx, c.command(ctx))
		}
		for _, g := range groups {
			_ = pipe.Process(ctx, g.command(ctx))
		}
		_, _ = pipe.Exec(ctx) // the outcome of each command is read below
		var again []*call     // allocated only when a script was lost
		r.first = r.first[:0]
		for _, c := range live {
			if c.step != stepLoad {
				c.reply, c.err = c.cmd.Result()
			}
			if r.n < maxRounds && s.recover(c, c.err, &r) {
				again = append(again, c)
			}
		}
		for _, g := range groups {
			again = s.settle(g, &r, again)
		}
		live = again
	}
	for _, c := range calls {
		if c.err == nil && c.reply == nil {
			c.err = errNoReply // not seen: a pipeline always sets a reply or an error
		}
		c.cmd = nil
	}
}

// round is what recover remembers of one round of a pipeline: its number, and the
// scripts already sent as EVAL or with their library in it.
type round struct {
	n     int
	first []*scriptEntry
}

// firstOf reports whether e is to be sent with its source or library: always for a call
// sent alone (r nil) and from the second round on (the calls left are those routed to
// other Cluster nodes), else for the first call of e in the round.
func (r *round) firstOf(e *scriptEntry) bool {
	if r == nil || r.n > 1 {
		return true
	}
	for _, f := range r.first {
		if f == e {
			return false
		}
	}
	r.first = append(r.first, e)
	return true
}

// recover says how c is sent again after err, the one place where a lost script or
// function is recovered; false: c is done (err is nil or is its error). r is nil for a
// call sent alone.
func (s *Store) recover(c *call, err error, r *round) bool {
	if err == nil {
		return false
	}
	switch c.step {
	case stepFCALL, stepLoad:
		switch {
		case noFunctions(err):
			s.evalOnly.Store(true)
			c.to(stepEVALSHA)
		case isNoFunction(err):
			if r.firstOf(c.e) {
				c.to(stepLoad)
			} else {
				c.to(stepFCALL) // after the load this round makes
			}
		case c.step == stepLoad && isRedirect(err):
			// The slot moved between finding its node and the call (a resharding): the
			// client follows the redirection, and loads there if need be.
			c.to(stepFCALL)
		default:
			return false
		}
	case stepEVALSHA:
		if !isNoScript(err) {
			return false
		}
		if r.firstOf(c.e) {
			c.to(stepEVAL)
		}
	default: // EVAL: nothing left to recover
		return false
	}
	return true
}

// sendOnNode sends c in a pipeline on the connection of the server that owns its keys:
// after FUNCTION LOAD REPLACE of its library (stepLoad; two callers may race to it), and
// followed by WAIT under WithReplicaAck, since WAIT counts the writes of the connection
// it runs on.
//
// A Cluster slot can move under the client's slot map (a resharding; go-redis reloads the
// map in the background, and only when it meets a redirection itself, which a node's own
// connection never shows it): the node then answers MOVED or ASK, and c is sent once more
// on the node the redirection names, where the library and WAIT have to be.
func (s *Store) sendOnNode(ctx context.Context, c *call) (any, error) {
	node, err := s.nodeFor(ctx, c.firstKey())
	if err != nil {
		return nil, err
	}
	reply, err := s.sendTo(ctx, node, c, false)
	if addr, ask, ok := redirection(err); ok {
		if cc, isCluster := s.client.(*redis.ClusterClient); isCluster {
			cc.ReloadState(ctx)
			if to := masterAt(ctx, cc, addr); to != nil {
				reply, err = s.sendTo(ctx, to, c, ask)
			}
		}
	}
	return reply, err
}

// sendTo sends c on node in one pipeline: ASKING first when asked (an ASK redirection
// lets the one command after it in), FUNCTION LOAD REPLACE for stepLoad, WAIT after it
// under WithReplicaAck.
func (s *Store) sendTo(ctx context.Context, node redis.Cmdable, c *call, asking bool) (any, error) {
	pipe := node.Pipeline()
	var load *redis.StringCmd
	if c.step == stepLoad {
		load = pipe.FunctionLoadReplace(ctx, c.e.lib)
	}
	if asking {
		_ = pipe.Process(ctx, redis.NewStatusCmd(ctx, "asking"))
	}
	_ = pipe.Process(ctx, c.command(ctx))
	var wait *redis.Cmd
	if s.ack != nil {
		wait = pipe.Do(ctx, "wait", s.ack.replicas, s.ack.waitMillis())
	}
	_, _ = pipe.Exec(ctx) // each command's outcome is read below
	if load != nil && load.Err() != nil {
		return nil, load.Err()
	}
	reply, err := c.cmd.Result()
	if err != nil || wait == nil {
		return reply, err
	}
	return reply, s.ack.check(wait)
}

// redirection parses a Cluster redirection, "MOVED <slot> <addr>" or "ASK <slot> <addr>".
func redirection(err error) (addr string, ask, ok bool) {
	if !isRedirect(err) {
		return "", false, false
	}
	f := strings.Fields(err.Error())
	if len(f) != 3 {
		return "", false, false
	}
	return f[2], f[0] == "ASK", true
}

// masterAt returns the client of the master of cc at addr, nil when cc knows none there (a
// node added since the slot map was read: a later call, after the map's reload, finds it).
// A node may know itself by an empty or loopback host where the client knows it by another
// (go-redis swaps such hosts for the one it reached the cluster on): then the port alone
// names it, if it names one master only.
func masterAt(ctx context.Context, cc *redis.ClusterClient, addr string) *redis.Client {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	anyHost := host == "" || net.ParseIP(host).IsLoopback() || host == "localhost"
	var (
		mu          sync.Mutex
		exact, same *redis.Client
		sameCount   int
	)
	_ = cc.ForEachMaster(ctx, func(_ context.Context, n *redis.Client) error {
		a := n.Options().Addr
		h, p, err := net.SplitHostPort(a)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case a == addr:
			exact = n
		case err == nil && p == port && (anyHost || h == "" || net.ParseIP(h).IsLoopback()):
			same = n
			sameCount++
		}
		return nil
	})
	if exact != nil {
		return exact
	}
	if sameCount == 1 {
		return same
	}
	return nil
}

// nodeFor returns the client of the one server that owns key.
func (s *Store) nodeFor(ctx context.Context, key string) (redis.UniversalClient, error) {
	switch c := s.client.(type) {
	case *redis.ClusterClient:
		return c.MasterForKey(ctx, key)
	case *redis.Ring:
		return c.GetShardClientForKey(key)
	default:
		return s.client, nil
	}
}

// errNoReply is the error of a command that a pipeline left without reply nor error.
var errNoReply = errors.New("distributed: pipeline returned no reply for the command")

// isNoScript reports a NOSCRIPT reply, raw or as go-redis's ErrNoScript.
func isNoScript(err error) bool {
	return err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT"))
}

// isRedirect reports a Cluster redirection, MOVED or ASK.
func isRedirect(err error) bool {
	return redis.HasErrorPrefix(err, "MOVED") || redis.HasErrorPrefix(err, "ASK")
}

// isNoFunction reports the reply of FCALL for a function the server does not have.
func isNoFunction(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.Contains(re.Error(), "Function not found")
}

// noFunctions reports a server that cannot run functions for this client: FCALL or
// FUNCTION is an unknown command (Redis before 7, or renamed away), or the ACL denies it.
func noFunctions(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := strings.ToLower(err.Error())
	if strings.HasPrefix(msg, "err unknown command") {
		return strings.Contains(msg, "fcall") || strings.Contains(msg, "function")
	}
	return strings.HasPrefix(msg, "noperm") && (strings.Contains(msg, "fcall") || strings.Contains(msg, "function"))
}
