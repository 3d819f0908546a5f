package algo

// Script is the Lua twin of an algorithm: the same state fields and the same arithmetic as
// its Go transition, run atomically inside Redis by the distributed store.
//
// Calling convention, shared by every script (prelude.lua decodes it for the scripts of
// this package; the Redis store encodes and decodes it in Go). A custom algorithm's
// script follows it to run in the Redis store:
//
//	KEYS[i]   the state key of the decision followed by Keys[i] (Keys[0] is "", the key itself);
//	          every key carries the same Redis Cluster hash tag.
//	ARGV[1]   "apply", "charge", "peek" or "refund"
//	ARGV[2]   now in µs since the Unix epoch, or "" to read the server's TIME; the scripts
//	          of this package also read "now pad": now followed by a padding in µs added
//	          to every TTL the call sets (a client clock's tolerance, see
//	          distributed.WithClockTolerance), which the store sends to them alone
//	ARGV[3]   N (permits asked for, or given back)
//	ARGV[4]   apply and peek: MaxWait in whole µs, rounded down, in [0, MaxMicros-1] (MaxMicros-1 for
//	          Forever, since a wait clamped to MaxMicros is never granted; the script clamps
//	          any other value the same way); refund: the grant's At in µs
//	ARGV[5..] the config, as appended by AppendArgs (floats formatted with %.17g)
//
// An "apply" replies with an array of seven integers:
// {allowed (0/1), limit, remaining, retry_after_us, reset_after_us, wait_us, at_us},
// where each of the three duration fields (retry_after_us, reset_after_us, wait_us) is
// MaxMicros for Never. A "peek" takes the arguments of an "apply" and replies what that
// apply would reply at the same instant, with what is available now as remaining (see
// [Peek]), but writes nothing: no state, no TTL, no key created or deleted (the prelude
// skips every write; a script of this package needs no code for it). A "charge" (a
// [Request] with Charge set, sent only to the script of an algorithm that states
// [Chargeable]) takes the arguments of an "apply", MaxWait 0, records N as used whatever
// is left and replies as an "apply" (allowed). A "refund" replies 0;
// before it reaches the twin, the prelude drops it (replying 0) when the key
// KEYS[1]..'!reset', the mark the Redis store's Reset leaves, says the grant acts before a
// Reset (see store.Admin.Reset): a custom script that does not start with the prelude reads
// no mark, and its refunds reach its state whatever Resets came before.
// Every write sets the keys' PEXPIRE to ResetAfter (plus the padding of ARGV[2], if any)
// rounded up to whole milliseconds, at least 2 ms (up to Redis 7.0, "PEXPIRE key 1" may
// delete the key at once), and a state that is fresh again is deleted.
//
// Units and precision: every instant and duration is an integer count of µs held in a Lua
// double, exact below 2^53 (about year 2255); counts are integers below 2^53 too. The
// scripts of this package keep their state as doubles packed in one string (struct.pack,
// bit-exact; docs/distributed.md, "State on Redis"); floats sent as arguments are
// formatted with %.17g, which tonumber reads back to the same double (tostring would keep
// only 14 digits).
//
// How a Script is sent (EVALSHA of Source, or a Redis 7 function library built from it,
// in a pipeline or alone) is the Redis store's business: it needs nothing but Source.
//
// A custom algorithm implements [Scripted]: its Script returns a *Script built once (its
// Source a plain Lua chunk that reads KEYS and ARGV as above, declares only locals and
// returns from its top level, without a "#!lua" line), and its AppendArgs appends the
// config the script reads from ARGV[5] on (floats formatted with %.17g). No state key,
// its Slot followed by one of Keys, may end in "!reset": the Redis store keeps a Reset's
// mark at a state key followed by that suffix, and refuses such a rule (ErrInvalidConfig).
// The example of docs/algorithms.md walks through one.
type Script struct {
	Name   string   // the algorithm's Name
	Source string   // Lua source, for EVAL and EVALSHA
	Keys   []string // suffixes appended to the state key; "" is the key itself
}

// Scripted is implemented by the algorithms that have a Lua twin. Its script answers the
// operations of the calling convention ([Script]): "apply", "refund", and "peek" for the
// Redis store's Peek (the scripts of this package get it from their prelude).
type Scripted interface {
	Algorithm
	// Script returns the algorithm's Lua twin. The same *Script is returned on every call.
	Script() *Script
	// AppendArgs appends the config arguments the script reads from ARGV[5] on.
	AppendArgs(args []any) []any
}
