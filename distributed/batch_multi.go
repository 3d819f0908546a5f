package distributed

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/internal/luawire"
)

// A pipeline's quick calls (see newCall) of one script and one config go to a single
// server as one command: the multi function of the script's library
// (luawire.RateLibrary), which decides them in turn at one reading of the server's TIME
// and replies each call's packed decision or error. Redis then parses one command, runs
// one function call and reads TIME once for the whole group: about 30% fewer instructions
// per decision than the same calls as quick FCALLs (callgrind, groups of 20). A call's
// error is its own, worded as it would be alone (see luawire.RateLibrary), so that
// callFailed classes it alike. A failed group falls back to the calls one by one (see
// settle).

// A pipeline's charges at the server's TIME (algo.Request.Charge) of one script and one
// config go as one command too, the charge-multi function, which takes each call's N: a
// charge then costs Redis what an Allow of 1 costs.

// group is the quick calls (or the charges) of one script and config in one pipeline,
// sent as one multi (or charge-multi) command.
type group struct {
	e      *scriptEntry
	charge bool  // the calls are charges (call.charge), not quick calls
	cfg    []any // the config arguments the calls share
	calls  []*call
	cmd    *redis.Cmd
}

// multiOK reports whether the store may send groups: one server (a *redis.Client, single
// or behind Sentinel: the keys of a group may hash to any slot), no WAIT after each call,
// functions known to work, and no group refused before.
func (s *Store) multiOK() bool {
	if s.ack != nil || s.evalOnly.Load() || s.noMulti.Load() {
		return false
	}
	_, one := s.client.(*redis.Client)
	return one
}

// groupCalls moves the quick calls of live that share a script and a config into groups
// of two or more and returns them with the calls left to send one by one.
func groupCalls(live []*call) (groups []*group, rest []*call) {
	rest = live[:0:0]
	for _, c := range live {
		if !(c.quick || c.charge) || c.step != stepFCALL || c.e.multi == nil {
			rest = append(rest, c)
			continue
		}
		cfg := c.args[3+c.args[2].(int):]
		if c.charge {
			cfg = cfg[4:] // after the charge's own head: "charge", now, N, MaxWait
		}
		var g *group
		for _, h := range groups {
			if h.e == c.e && h.charge == c.charge && sameArgs(h.cfg, cfg) {
				g = h
				break
			}
		}
		if g == nil {
			g = &group{e: c.e, charge: c.charge, cfg: cfg}
			groups = append(groups, g)
		}
		g.calls = append(g.calls, c)
	}
	// A group of one goes as the quick call it is.
	kept := groups[:0]
	for _, g := range groups {
		if len(g.calls) == 1 {
			rest = append(rest, g.calls[0])
			continue
		}
		kept = append(kept, g)
	}
	return kept, rest
}

// sameArgs reports whether two config argument lists are equal, comparing only the basic
// types AppendArgs produces (anything else never matches, rather than panic on ==).
func sameArgs(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		switch x := a[i].(type) {
		case string, int64, int, float64, int32, uint64, bool:
			if x != b[i] {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// command returns the multi command of g: FCALL multi numkeys, every call's keys in
// turn, then the shared config; a charge group's names the charge-multi function and puts
// each call's N before the config.
func (g *group) command(ctx context.Context) *redis.Cmd {
	nk := g.calls[0].args[2].(int)
	args := make([]any, 0, 3+(nk+1)*len(g.calls)+len(g.cfg))
	fn := g.e.multi
	if g.charge {
		fn = g.e.charges
	}
	args = append(args, "fcall", fn, nk*len(g.calls))
	for _, c := range g.calls {
		args = append(args, c.args[3:3+nk]...)
	}
	if g.charge {
		for _, c := range g.calls {
			args = append(args, c.args[3+nk+2]) // its N (ARGV[3])
		}
	}
	args = append(args, g.cfg...)
	g.cmd = redis.NewCmd(ctx, args...)
	g.cmd.SetFirstKeyPos(3)
	return g.cmd
}

// settle hands each call of g its reply or error after the pipeline ran, and returns the
// calls to send again in the next round (see recover), if this round was not the last.
//
// A group the server answered is split: each call gets its packed decision, or the error
// it raised alone. A group the server refused because it lacks the function or functions
// altogether is recovered call by call, as a quick call would be. Any other refusal of
// the server (a Cluster-enabled server behind a plain client, say: CROSSSLOT) turns groups
// off for the store and sends the calls one by one. A failure of the connection is every
// call's, as it is for the calls of a pipeline.
func (s *Store) settle(g *group, r *round, again []*call) []*call {
	reply, err := g.cmd.Text()
	if err == nil {
		err = luawire.SplitMulti(reply, len(g.calls), func(i int, packed, msg string) {
			c := g.calls[i]
			if msg != "" {
				c.reply, c.err = nil, scriptError(msg)
				return
			}
			c.reply, c.err = packed, nil
		})
		if err == nil {
			return again
		}
		for _, c := range g.calls { // a reply outside the convention: nothing to resend
			c.reply, c.err = nil, err
		}
		return again
	}
	var re redis.Error
	if errors.As(err, &re) && !isNoFunction(err) && !noFunctions(err) {
		s.noMulti.Store(true)
		for _, c := range g.calls {
			c.reply, c.err = nil, err
			if r.n < maxRounds {
				again = append(again, c)
			}
		}
		return again
	}
	for _, c := range g.calls {
		c.reply, c.err = nil, err
		if r.n < maxRounds && s.recover(c, err, r) {
			again = append(again, c)
		}
	}
	return again
}

// scriptError is the error one call of a group raised or replied, as the server reports
// it for a call of its own: a Redis error (redis.Error).
type scriptError string

func (e scriptError) Error() string { return string(e) }

// RedisError marks scriptError as an error the server replied (redis.Error).
func (scriptError) RedisError() {}
