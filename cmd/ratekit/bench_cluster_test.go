package main

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/ratekit/limiter/internal/redistest"
)

// TestBenchRedisCluster runs the bench against a throw-away 3-master cluster, once given by
// --cluster and once by a redis+cluster:// URL. It checks what a run guarantees whatever
// the machine's load: no error, the title, and only prefixed keys in the cluster (as many
// as there were decisions allow: none if no call was made in time).
func TestBenchRedisCluster(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, 3)
	addrs := strings.Join(c.Addrs(), ",")
	for _, args := range [][]string{
		{"--cluster", addrs},
		{"--store", "redis+cluster://" + addrs + "?dial_timeout=2s"},
	} {
		args = append([]string{"bench", "--algo", "gcra", "--rate", "1", "--burst", "1000",
			"--goroutines", "4", "--keys", "50", "--duration", "100ms"}, args...)
		code, out, errOut := runCLI(t, args...)
		if code != 0 || errOut != "" {
			t.Fatalf("%q: exit %d, stderr %q; want 0 and nothing", args, code, errOut)
		}
		title := "gcra(rate=1/s, burst=1000) on redis cluster " + addrs + " (3 masters): 4 goroutines, 50 keys\n"
		if !strings.HasPrefix(out, title) || !strings.Contains(out, "\n  errors      0\n") {
			t.Errorf("%q: summary lacks the title %q or 0 errors:\n%s", args, title, out)
		}
		m := benchRate.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("%q: no decisions line in:\n%s", args, out)
		}
		decisions, _ := strconv.Atoi(m[1])
		var keys []string
		ctx := context.Background()
		for _, n := range c.Nodes() {
			k, err := n.Client(t).Keys(ctx, "*").Result()
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, k...)
		}
		for _, k := range keys {
			if !strings.HasPrefix(k, benchPrefix) {
				t.Errorf("key %q lacks the prefix %q", k, benchPrefix)
			}
		}
		// Each key a decision touched is kept for 1000 s by the slow refill.
		if decisions > 0 && len(keys) == 0 {
			t.Errorf("%q: %d decisions but no key in the cluster", args, decisions)
		}
	}
}

// TestBenchClusterOnPlainRedisExitsOne: a node without cluster support is an error naming
// the cluster, on one line, not a usage error and not a run.
func TestBenchClusterOnPlainRedisExitsOne(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	code, out, errOut := runCLI(t, "bench", "--cluster", s.Addr(), "--duration", "10s")
	if code != exitFailure || out != "" {
		t.Errorf("exit %d, stdout %q; want %d and nothing", code, out, exitFailure)
	}
	if want := "ratekit: bench: cannot reach Redis Cluster at " + s.Addr() + ": "; strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, want) {
		t.Errorf("stderr = %q, want one line starting with %q", errOut, want)
	}
}

func TestParseClusterURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		spec, addrs, user, pass string
		tls                     bool
	}{
		{spec: "redis+cluster://h1:7000", addrs: "h1:7000"},
		{spec: "redis+cluster://h1:7000,h2:7001,[::1]:7002", addrs: "h1:7000,h2:7001,[::1]:7002"},
		{spec: "redis+cluster://u:p%40ss@h1:1,h2:2/", addrs: "h1:1,h2:2", user: "u", pass: "p@ss"},
		{spec: "rediss+cluster://h1:1,h2:2?max_redirects=5", addrs: "h1:1,h2:2", tls: true},
	} {
		o, err := parseClusterURL(tc.spec)
		if err != nil {
			t.Errorf("%s: %v", tc.spec, err)
			continue
		}
		if got := strings.Join(o.Addrs, ","); got != tc.addrs || o.Username != tc.user || o.Password != tc.pass || (o.TLSConfig != nil) != tc.tls {
			t.Errorf("%s: addrs %s user %q pass %q tls %v; want %s %q %q %v",
				tc.spec, got, o.Username, o.Password, o.TLSConfig != nil, tc.addrs, tc.user, tc.pass, tc.tls)
		}
	}
	for _, spec := range []string{
		"redis+cluster://",              // no node
		"redis+cluster://h1",            // no port
		"redis+cluster://h1:1,",         // empty node
		"redis+cluster://h1:1/2",        // a db
		"redis+cluster://h1:1?bogus=1",  // an unknown option
		"redis+cluster://h1:1?a=%zz",    // a query that does not parse
		"redis://h1:1",                  // not a cluster URL
		"redis+cluster://:1,h2:2?x=1&y", // no host
	} {
		if _, err := parseClusterURL(spec); err == nil {
			t.Errorf("%s: no error", spec)
		}
	}
}

func TestBenchClusterUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cluster", "h1:1", "--store", "memory"}, "use --store or --cluster, not both"},
		{[]string{"--cluster", ""}, `bad Redis Cluster URL "redis+cluster://": no node address`},
		{[]string{"--cluster", "h1"}, `node address "h1" is not host:port`},
		{[]string{"--cluster", "redis://h1:1"}, "a URL goes to --store"},
		{[]string{"--store", "redis+cluster://h1:1/3"}, "only db 0"},
	} {
		args := append([]string{"bench"}, tc.args...)
		code, out, errOut := runCLI(t, args...)
		if code != exitUsage || out != "" {
			t.Errorf("%q: exit %d, stdout %q; want %d and nothing", args, code, out, exitUsage)
		}
		if strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "ratekit: bench: ") || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: stderr = %q, want one line \"ratekit: bench: ...%s...\"", args, errOut, tc.want)
		}
	}
}
