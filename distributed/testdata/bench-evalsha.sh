#!/bin/sh
# bench-evalsha.sh compares the Redis store with the server's own ceiling, on one
# throw-away redis-server:
#
#   1. go test -bench BenchmarkApply (64 goroutines, 10,000 keys, one go-redis client);
#   2. redis-benchmark -c 64 running the same token-bucket EVALSHA on 10,000 random keys,
#      i.e. the script alone with no Go client in the way.
#
# Usage, from anywhere in the repository:
#   distributed/testdata/bench-evalsha.sh            # port 16399, 200000 requests
#   PORT=17000 REQUESTS=500000 distributed/testdata/bench-evalsha.sh
#
# It never touches another Redis: it refuses a port that already answers PING.
set -eu

PORT=${PORT:-16399}
REQUESTS=${REQUESTS:-200000}
CLIENTS=${CLIENTS:-64}
RATE=${RATE:-100}
BURST=${BURST:-100}

root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT INT TERM

if redis-cli -p "$PORT" PING >/dev/null 2>&1; then
	echo "port $PORT already has a Redis: pick another with PORT=..." >&2
	exit 1
fi
redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
	--daemonize no >"$dir/redis.log" 2>&1 &
pid=$!
tries=0
until redis-cli -p "$PORT" PING >/dev/null 2>&1; do
	tries=$((tries + 1))
	if [ "$tries" -gt 200 ]; then
		echo "redis-server did not start:" >&2
		cat "$dir/redis.log" >&2
		exit 1
	fi
	sleep 0.05
done

echo "== go test -bench BenchmarkApply (redis-server on 127.0.0.1:$PORT)"
cd "$root"
LIMITER_BENCH_REDIS_ADDR="127.0.0.1:$PORT" go test -run '^$' -bench 'BenchmarkApply' \
	-benchtime "${REQUESTS}x" ./distributed/

# The token bucket script exactly as algo/scripts.go builds it: prelude, newline, body.
src=$(cat algo/prelude.lua; printf '\n'; cat algo/token_bucket.lua)
sha=$(redis-cli -p "$PORT" SCRIPT LOAD "$src")
key='limiter:{user:__rand_int__}:tb'
echo "== one call by hand: EVALSHA $sha 1 limiter:{user:1}:tb apply \"\" 1 0 $RATE $BURST"
redis-cli -p "$PORT" EVALSHA "$sha" 1 'limiter:{user:1}:tb' apply "" 1 0 "$RATE" "$BURST"

echo "== redis-benchmark -c $CLIENTS -n $REQUESTS -r 10000 EVALSHA <token-bucket> 1 $key apply \"\" 1 0 $RATE $BURST"
# -q still redraws a progress line with carriage returns: keep the final figure only.
redis-benchmark -p "$PORT" -c "$CLIENTS" -n "$REQUESTS" -r 10000 -q \
	EVALSHA "$sha" 1 "$key" apply "" 1 0 "$RATE" "$BURST" | tr '\r' '\n' | tail -n 1
