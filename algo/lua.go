package algo

// Script is the Lua twin of an algorithm: the same state fields and the same arithmetic as
// its Go transition, run atomically inside Redis by the distributed store.
//
// Calling convention, shared by every script:
//
//	KEYS[i]   the state key of the decision followed by Keys[i] (Keys[0] is "", the key itself);
//	          every key carries the same Redis Cluster hash tag.
//	ARGV[1]   "apply" or "refund"
//	ARGV[2]   now in µs since the Unix epoch, or "" to read the server's TIME
//	ARGV[3]   N (permits asked for, or given back)
//	ARGV[4]   apply: MaxWait in µs (MaxMicros for Forever); refund: the grant's At in µs
//	ARGV[5..] the config, as appended by AppendArgs (floats formatted with %.17g)
//
// An "apply" replies with an array of seven integers:
// {allowed (0/1), limit, remaining, retry_after_us, reset_after_us, wait_us, at_us},
// where each of the three duration fields (retry_after_us, reset_after_us, wait_us) is
// MaxMicros for Never. A "refund" replies 0. Every write sets the keys' PEXPIRE to
// ResetAfter rounded up to whole milliseconds, at least 2 ms (up to Redis 7.0,
// "PEXPIRE key 1" may delete the key at once), and a state that is fresh again is deleted.
type Script struct {
	Name   string   // the algorithm's Name
	Source string   // Lua source
	Keys   []string // suffixes appended to the state key; "" is the key itself
}

// Scripted is implemented by the algorithms that have a Lua twin.
type Scripted interface {
	Algorithm
	// Script returns the algorithm's Lua twin. The same *Script is returned on every call.
	Script() *Script
	// AppendArgs appends the config arguments the script reads from ARGV[5] on.
	AppendArgs(args []any) []any
}
