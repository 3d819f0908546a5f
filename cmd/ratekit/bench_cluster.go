package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/store"
)

// clusterSchemes are the URL schemes of a Redis Cluster given to --store: go-redis has no
// scheme of its own for one (ParseClusterURL takes the extra nodes as addr= parameters), and
// a list of nodes in the host is what --cluster takes too.
var clusterSchemes = map[string]string{"redis+cluster": "redis", "rediss+cluster": "rediss"}

// isClusterURL reports whether spec names a Redis Cluster.
func isClusterURL(spec string) bool {
	scheme, _, ok := strings.Cut(spec, "://")
	_, cluster := clusterSchemes[scheme]
	return ok && cluster
}

// parseClusterURL turns redis+cluster://[user:password@]host:port[,host:port...][?option=...]
// (rediss+cluster:// for TLS) into cluster options. The options are go-redis's
// ParseClusterURL query parameters. A cluster has only db 0, so a path is refused.
func parseClusterURL(spec string) (*redis.ClusterOptions, error) {
	scheme, rest, _ := strings.Cut(spec, "://")
	base, ok := clusterSchemes[scheme]
	if !ok {
		return nil, fmt.Errorf("scheme %q is not redis+cluster or rediss+cluster", scheme)
	}
	rest, query, _ := strings.Cut(rest, "?")
	authority, path, _ := strings.Cut(rest, "/")
	if path != "" {
		return nil, fmt.Errorf("a Redis Cluster has only db 0, got path /%s", path)
	}
	userinfo, hosts := "", authority
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		userinfo, hosts = authority[:i+1], authority[i+1:]
	}
	addrs, err := splitAddrs(hosts)
	if err != nil {
		return nil, err
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, err
	}
	for _, a := range addrs[1:] {
		q.Add("addr", a)
	}
	return redis.ParseClusterURL(base + "://" + userinfo + addrs[0] + "?" + q.Encode())
}

// splitAddrs splits a comma-separated list of host:port.
func splitAddrs(list string) ([]string, error) {
	if list == "" {
		return nil, fmt.Errorf("no node address (want host:port[,host:port...])")
	}
	addrs := strings.Split(list, ",")
	for _, a := range addrs {
		if host, port, err := net.SplitHostPort(a); err != nil || host == "" || port == "" {
			return nil, fmt.Errorf("node address %q is not host:port", a)
		}
	}
	return addrs, nil
}

// openCluster opens the Redis Cluster of spec (a redis+cluster:// URL), checks that every
// master answers, and returns the store, its description for the summary and its closer.
func openCluster(ctx context.Context, spec string, goroutines int) (store.Store, string, func(), error) {
	opts, err := parseClusterURL(spec)
	if err != nil {
		return nil, "", nil, usagef("bench: bad Redis Cluster URL %q: %v", spec, err)
	}
	opts.ContextTimeoutEnabled = true
	if opts.PoolSize == 0 {
		opts.PoolSize = goroutines // per node: measure the store, not a wait for a connection
	}
	seeds := strings.Join(opts.Addrs, ",")
	masters, err := pingCluster(ctx, opts)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", nil, errInterrupted
		}
		return nil, "", nil, fmt.Errorf("bench: cannot reach Redis Cluster at %s: %w", seeds, err)
	}
	client := redis.NewClusterClient(opts)
	s, err := distributed.New(client, distributed.WithPrefix(benchPrefix))
	if err != nil {
		_ = client.Close()
		return nil, "", nil, fmt.Errorf("bench: %w", err)
	}
	where := fmt.Sprintf("redis cluster %s (%d masters)", seeds, masters)
	return s, where, func() { _ = s.Close(); _ = client.Close() }, nil
}

// pingCluster checks, without retries and within pingTimeout, that the nodes of opts form
// a cluster whose every master answers PING, and returns the number of masters.
func pingCluster(ctx context.Context, opts *redis.ClusterOptions) (int, error) {
	probe := *opts
	probe.MaxRetries = -1
	probe.DialerRetries = 1
	probe.PoolSize = 1
	c := redis.NewClusterClient(&probe)
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	// ForEachMaster alone would succeed on a node without cluster support (no masters to
	// visit): CLUSTER SLOTS is what fails there.
	if err := c.ClusterSlots(ctx).Err(); err != nil {
		return 0, err
	}
	var masters atomic.Int64
	err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		masters.Add(1)
		return m.Ping(ctx).Err()
	})
	return int(masters.Load()), err
}
