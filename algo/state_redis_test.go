package algo

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The rate algorithms keep their state on Redis as one packed string (base.lua,
// get_state and put_state): a tag byte, then little-endian doubles. Tests that inspect
// the state read it as the map of fields the previous format (a hash) held, so that one
// parser serves both formats.

// packedFields names the fields of each layout, by tag, in the order they are packed.
var packedFields = map[byte][]string{
	'F': {"win", "count"},
	'C': {"win", "curr", "prev"},
	'T': {"tokens", "last", "act", "rb", "rate"},
	'G': {"tat", "act", "iv", "rb", "last", "burst"},
	'L': {"level", "last", "act", "rate"},
	'B': {"stored", "next", "rate", "burst"},
	'W': {"stored", "next", "rate", "warmup", "cold"},
	'P': {"until", "block"},
}

// readStateLua replies {type} followed by the key's value: the string of a string, the
// field-value pairs of a hash.
const readStateLua = `local t = redis.call('TYPE', KEYS[1]).ok
if t == 'string' then return {t, redis.call('GET', KEYS[1])} end
if t == 'hash' then local h = redis.call('HGETALL', KEYS[1]) table.insert(h, 1, t) return h end
return {t}`

var readStateScript = redis.NewScript(readStateLua)

// stateCmd queues the read of key's state on c (a pipeline, a transaction or a client).
func stateCmd(ctx context.Context, c redis.Scripter, key string) *redis.Cmd {
	return readStateScript.Eval(ctx, c, []string{key})
}

// stateOf returns what stateCmd read as a map of fields (empty: no key): a hash's fields
// as they are, a packed string decoded with packedFields, its numbers formatted as
// formatField does.
func stateOf(cmd *redis.Cmd) (map[string]string, error) {
	v, err := cmd.Slice()
	if err != nil {
		return nil, err
	}
	h := map[string]string{}
	switch v[0] {
	case "none":
	case "hash":
		for i := 1; i+1 < len(v); i += 2 {
			h[v[i].(string)] = v[i+1].(string)
		}
	case "string":
		return decodeState(v[1].(string))
	default:
		return nil, fmt.Errorf("state key of type %v", v[0])
	}
	return h, nil
}

// decodeState decodes a packed state into its fields.
func decodeState(s string) (map[string]string, error) {
	if len(s) == 0 {
		return nil, fmt.Errorf("empty state string")
	}
	names, ok := packedFields[s[0]]
	if !ok || len(s) != 1+8*len(names)+len(stateEnd) || !strings.HasSuffix(s, stateEnd) {
		return nil, fmt.Errorf("state string %q: unknown layout", s)
	}
	h := make(map[string]string, len(names))
	for i, name := range names {
		h[name] = formatField(math.Float64frombits(binary.LittleEndian.Uint64([]byte(s[1+8*i:]))))
	}
	return h, nil
}

// stateEnd is base.lua's STATE_END: the four bytes that end every packed state (a NUL,
// "rk", the format's version 1).
const stateEnd = "\x00rk\x01"

// packState packs fields as the scripts do, under tag: the inverse of decodeState.
func packState(tag byte, fields ...float64) string {
	return rawState(tag, fields...) + stateEnd
}

// rawState is packState without stateEnd: a string with a state's tag and the length of
// its fields, which an application could hold by chance.
func rawState(tag byte, fields ...float64) string {
	b := []byte{tag}
	for _, f := range fields {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
	}
	return string(b)
}

// formatField formats x as the previous scripts stored it: whole numbers of magnitude below
// 9e15 (but -0) in decimal, others with %.17g.
func formatField(x float64) string {
	if x == math.Trunc(x) && math.Abs(x) < 9e15 && x != 0 || x == 0 && !math.Signbit(x) {
		return strconv.FormatInt(int64(x), 10)
	}
	return strconv.FormatFloat(x, 'g', 17, 64)
}

// readState reads key's state at once (stateCmd and stateOf).
func readState(ctx context.Context, rdb redis.Scripter, key string) (map[string]string, error) {
	return stateOf(stateCmd(ctx, rdb, key))
}
