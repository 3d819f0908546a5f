package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/leasing"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

// storeFlags are the flags that choose and tune the store.
type storeFlags struct {
	redis         string
	prefix        string
	timeout       time.Duration
	batching      bool
	denialCache   bool
	denialEntries int
	denialMaxAge  time.Duration
	lease         int64
	leaseTTL      time.Duration
	localMaxKeys  int
}

// openStore builds the store the flags ask for: in memory when --redis is empty, else
// Redis (redis://, rediss://) or Redis Cluster (redis+cluster://host:port,host:port,
// rediss+cluster:// for TLS), wrapped in leasing when --lease is set. desc describes it for
// the logs, without the password.
func openStore(ctx context.Context, f storeFlags, startUnreachable bool, log *slog.Logger) (s store.Store, desc string, err error) {
	if f.redis == "" {
		var opts []local.Option
		if f.localMaxKeys > 0 {
			opts = append(opts, local.WithMaxKeys(f.localMaxKeys))
		}
		s, err = local.New(opts...)
		desc = "memory"
	} else {
		var client redis.UniversalClient
		client, desc, err = redisClient(f.redis)
		if err != nil {
			return nil, "", err
		}
		if err := client.Ping(ctx).Err(); err != nil {
			if !startUnreachable {
				client.Close()
				return nil, "", fmt.Errorf("redis %s: %w (--failure-policy closed, open or local starts without it)", desc, err)
			}
			log.Error("store outage at start: serving by the failure policy until Redis answers", slog.String("store", desc), slog.Any("cause", err))
		}
		opts := []distributed.Option{distributed.WithPrefix(f.prefix), distributed.WithTimeout(f.timeout)}
		if !f.batching {
			opts = append(opts, distributed.WithBatching(distributed.Batching{Off: true}))
		}
		if f.denialCache {
			opts = append(opts, distributed.WithDenialCache(distributed.DenialCache{MaxEntries: f.denialEntries, MaxAge: f.denialMaxAge}))
		}
		s, err = distributed.New(client, opts...)
		if err != nil {
			client.Close()
		}
	}
	if err != nil {
		return nil, "", err
	}
	if f.lease > 0 {
		ls, err := leasing.New(s, f.lease, leasing.WithTTL(f.leaseTTL))
		if err != nil {
			s.Close()
			return nil, "", err
		}
		return ls, desc + fmt.Sprintf(" (leasing slices of %d)", f.lease), nil
	}
	return s, desc, nil
}

// redisClient parses a Redis URL: go-redis's redis:// and rediss://, and for a Cluster
// redis+cluster://[user:password@]host:port[,host:port...][?options] (go-redis has no
// scheme of its own for one; its ParseClusterURL takes the extra nodes as addr=).
func redisClient(spec string) (redis.UniversalClient, string, error) {
	scheme, rest, ok := strings.Cut(spec, "://")
	if !ok {
		return nil, "", fmt.Errorf("--redis %q: want redis://host:port or redis+cluster://host:port,...", spec)
	}
	switch scheme {
	case "redis", "rediss":
		o, err := redis.ParseURL(spec)
		if err != nil {
			return nil, "", fmt.Errorf("--redis: %w", err)
		}
		o.ContextTimeoutEnabled = true
		return redis.NewClient(o), scheme + "://" + o.Addr, nil
	case "redis+cluster", "rediss+cluster":
		base := strings.TrimSuffix(scheme, "+cluster")
		rest, query, _ := strings.Cut(rest, "?")
		authority, path, _ := strings.Cut(rest, "/")
		if path != "" {
			return nil, "", fmt.Errorf("--redis: a Redis Cluster has only db 0, got /%s", path)
		}
		userinfo, hosts := "", authority
		if i := strings.LastIndexByte(authority, '@'); i >= 0 {
			userinfo, hosts = authority[:i+1], authority[i+1:]
		}
		addrs := strings.Split(hosts, ",")
		if hosts == "" {
			return nil, "", fmt.Errorf("--redis: no cluster node in %q", spec)
		}
		q, err := url.ParseQuery(query)
		if err != nil {
			return nil, "", fmt.Errorf("--redis: %w", err)
		}
		for _, a := range addrs[1:] {
			q.Add("addr", a)
		}
		o, err := redis.ParseClusterURL(base + "://" + userinfo + addrs[0] + "?" + q.Encode())
		if err != nil {
			return nil, "", fmt.Errorf("--redis: %w", err)
		}
		o.ContextTimeoutEnabled = true
		return redis.NewClusterClient(o), scheme + "://" + hosts, nil
	}
	return nil, "", fmt.Errorf("--redis %q: unknown scheme %q (want redis, rediss, redis+cluster or rediss+cluster)", spec, scheme)
}
