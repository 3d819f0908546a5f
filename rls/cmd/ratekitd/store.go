package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
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
	redisType     string // the reference's REDIS_TYPE, for a --redis in its REDIS_URL form
	auth          string // "password" or "user:password" of the Redis nodes
	sentinelAuth  string // the same for the sentinels
	tls           tlsFlags
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
// Redis (redis://, rediss://), Redis Cluster (redis+cluster://host:port,host:port,
// rediss+cluster:// for TLS) or Redis Sentinel (redis+sentinel://host:port,.../master,
// rediss+sentinel://), wrapped in leasing when --lease is set. desc describes it for the
// logs, without the password.
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
		client, desc, err = redisClient(f)
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

// redisClient is the client the Redis flags describe (redisOptions), and its description.
func redisClient(f storeFlags) (redis.UniversalClient, string, error) {
	o, err := redisOptions(f)
	if err != nil {
		return nil, "", err
	}
	switch {
	case o.cluster != nil:
		return redis.NewClusterClient(o.cluster), o.desc, nil
	case o.failover != nil:
		return redis.NewFailoverClient(o.failover), o.desc, nil
	}
	return redis.NewClient(o.single), o.desc, nil
}

// redisConfig is one of go-redis's options, as the flags ask for it.
type redisConfig struct {
	single   *redis.Options
	cluster  *redis.ClusterOptions
	failover *redis.FailoverOptions
	desc     string // for the logs, without the password
}

// redisOptions parses --redis and the flags beside it. --redis is a URL: go-redis's
// redis://, rediss:// and unix://; for a Cluster redis+cluster://[user:password@]host:port
// [,host:port...][?options] (go-redis has no scheme of its own for one; its
// ParseClusterURL takes the extra nodes as addr=); for Sentinel
// redis+sentinel://[user:password@]sentinel:port[,sentinel:port...]/master[/db][?options],
// the user and password being the Redis nodes' (the sentinels' are --redis-sentinel-auth).
// Or it is envoyproxy/ratelimit's REDIS_URL, read as its REDIS_TYPE says (--redis-type):
// single "host:port" (or a unix socket's path), cluster "host:port,host:port", sentinel
// "master,sentinel:port[,sentinel:port...]".
//
// TLS is on for the rediss schemes and with --redis-tls (REDIS_TLS); its certificates and
// their checks are tlsFlags'. The TLS config names no server: each connection checks the
// certificate of the host it dials, so the nodes of a Cluster and the sentinels and nodes
// of a Sentinel group may hold certificates of their own names.
func redisOptions(f storeFlags) (*redisConfig, error) {
	spec, err := referenceURL(f)
	if err != nil {
		return nil, err
	}
	scheme, rest, _ := strings.Cut(spec, "://")
	tlsOn := strings.HasPrefix(scheme, "rediss") || f.tls.on
	var tc *tls.Config
	switch {
	case tlsOn:
		if tc, err = f.tls.config(); err != nil {
			return nil, err
		}
	case f.tls.set():
		return nil, fmt.Errorf("--redis-tls-cert, --redis-tls-key, --redis-tls-ca and --redis-tls-skip-hostname-verification need TLS: a rediss URL or --redis-tls (REDIS_TLS=true)")
	}
	user, pass, err := splitAuth(f.auth, "--redis-auth")
	if err != nil {
		return nil, err
	}
	suffix := ""
	if tlsOn && scheme != "rediss" && !strings.HasPrefix(scheme, "rediss+") {
		suffix = " (TLS)"
	}
	c := &redisConfig{}
	switch scheme {
	case "redis", "rediss", "unix":
		o, err := redis.ParseURL(spec)
		if err != nil {
			return nil, fmt.Errorf("--redis: %w", err)
		}
		o.TLSConfig = withSkipVerify(tc, o.TLSConfig)
		if err := setAuth(&o.Username, &o.Password, user, pass); err != nil {
			return nil, err
		}
		o.ContextTimeoutEnabled = true
		c.single, c.desc = o, scheme+"://"+o.Addr
	case "redis+cluster", "rediss+cluster":
		hosts, query, userinfo, path, err := splitMulti(spec, rest)
		if err != nil {
			return nil, err
		}
		if path != "" {
			return nil, fmt.Errorf("--redis: a Redis Cluster has only db 0, got /%s", path)
		}
		for _, a := range hosts[1:] {
			query.Add("addr", a)
		}
		o, err := redis.ParseClusterURL(strings.TrimSuffix(scheme, "+cluster") + "://" + userinfo + hosts[0] + "?" + query.Encode())
		if err != nil {
			return nil, fmt.Errorf("--redis: %w", err)
		}
		o.TLSConfig = withSkipVerify(tc, o.TLSConfig)
		if err := setAuth(&o.Username, &o.Password, user, pass); err != nil {
			return nil, err
		}
		o.ContextTimeoutEnabled = true
		c.cluster, c.desc = o, scheme+"://"+strings.Join(hosts, ",")
	case "redis+sentinel", "rediss+sentinel":
		o, err := sentinelOptions(spec, rest)
		if err != nil {
			return nil, err
		}
		o.TLSConfig = withSkipVerify(tc, o.TLSConfig)
		if err := setAuth(&o.Username, &o.Password, user, pass); err != nil {
			return nil, err
		}
		if o.SentinelUsername, o.SentinelPassword, err = splitAuth(f.sentinelAuth, "--redis-sentinel-auth"); err != nil {
			return nil, err
		}
		o.ContextTimeoutEnabled = true
		c.failover, c.desc = o, scheme+"://"+strings.Join(o.SentinelAddrs, ",")+"/"+o.MasterName
	default:
		return nil, fmt.Errorf("--redis %q: unknown scheme %q (want redis, rediss, unix, redis+cluster, rediss+cluster, redis+sentinel or rediss+sentinel)", spec, scheme)
	}
	if f.sentinelAuth != "" && c.failover == nil {
		return nil, fmt.Errorf("--redis-sentinel-auth (REDIS_SENTINEL_AUTH) is for Redis Sentinel only (redis+sentinel://, or REDIS_TYPE=sentinel)")
	}
	c.desc += suffix
	return c, nil
}

// referenceURL returns --redis as a URL: as given when it is one, else read as
// envoyproxy/ratelimit reads REDIS_URL for its REDIS_TYPE (--redis-type).
func referenceURL(f storeFlags) (string, error) {
	typ := strings.ToLower(f.redisType)
	if scheme, _, ok := strings.Cut(f.redis, "://"); ok {
		kind := "single"
		if _, k, ok := strings.Cut(scheme, "+"); ok {
			kind = k
		}
		if typ != "" && typ != kind {
			return "", fmt.Errorf("--redis-type %s (REDIS_TYPE) beside a %s:// URL, which says %s: give one", typ, scheme, kind)
		}
		return f.redis, nil
	}
	scheme := "redis"
	if f.tls.on {
		scheme = "rediss"
	}
	switch typ {
	case "", "single":
		if strings.HasPrefix(f.redis, "/") {
			return "unix://" + f.redis, nil // the reference's REDIS_SOCKET_TYPE=unix
		}
		if _, _, err := net.SplitHostPort(f.redis); err != nil {
			return "", fmt.Errorf("--redis %q: want a URL (redis://host:port, rediss://, redis+cluster://, redis+sentinel://) or REDIS_URL's host:port", f.redis)
		}
		return scheme + "://" + f.redis, nil
	case "cluster":
		return scheme + "+cluster://" + f.redis, nil
	case "sentinel":
		master, sentinels, ok := strings.Cut(f.redis, ",")
		if !ok || master == "" || sentinels == "" {
			return "", fmt.Errorf("--redis %q with --redis-type sentinel: want <master name>,<sentinel host:port>[,...] (envoyproxy/ratelimit's REDIS_URL)", f.redis)
		}
		return scheme + "+sentinel://" + sentinels + "/" + url.PathEscape(master), nil
	}
	return "", fmt.Errorf("--redis-type %q (REDIS_TYPE): want single, cluster or sentinel", f.redisType)
}

// splitMulti splits a URL of several hosts, scheme://[userinfo@]h1:p1,h2:p2[/path][?query],
// rest being what follows "://". userinfo keeps its '@'.
func splitMulti(spec, rest string) (hosts []string, query url.Values, userinfo, path string, err error) {
	rest, rawQuery, _ := strings.Cut(rest, "?")
	authority, path, _ := strings.Cut(rest, "/")
	hostList := authority
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		userinfo, hostList = authority[:i+1], authority[i+1:]
	}
	if hostList == "" {
		return nil, nil, "", "", fmt.Errorf("--redis: no host in %q", spec)
	}
	if query, err = url.ParseQuery(rawQuery); err != nil {
		return nil, nil, "", "", fmt.Errorf("--redis: %w", err)
	}
	return strings.Split(hostList, ","), query, userinfo, path, nil
}

// sentinelOptions parses redis+sentinel://[user:password@]s1:port[,s2:port...]/master[/db]
// [?go-redis's failover options], through go-redis's ParseFailoverURL, which takes the
// master as master_name= and the other sentinels as addr=.
func sentinelOptions(spec, rest string) (*redis.FailoverOptions, error) {
	hosts, query, userinfo, path, err := splitMulti(spec, rest)
	if err != nil {
		return nil, err
	}
	master, db, _ := strings.Cut(path, "/")
	if master, err = url.PathUnescape(master); err != nil || master == "" {
		return nil, fmt.Errorf("--redis %q: want the master's name after the sentinels (redis+sentinel://host:port/mymaster)", spec)
	}
	for _, q := range []string{"master_name", "username", "password", "db"} {
		if query.Has(q) {
			return nil, fmt.Errorf("--redis: %s= is given by the URL's path and user (redis+sentinel://user:password@host:port/master/db)", q)
		}
	}
	query.Set("master_name", master)
	if db != "" {
		query.Set("db", db)
	}
	for _, a := range hosts[1:] {
		query.Add("addr", a)
	}
	o, err := redis.ParseFailoverURL("redis://" + userinfo + hosts[0] + "?" + query.Encode())
	if err != nil {
		return nil, fmt.Errorf("--redis: %w", err)
	}
	// go-redis reads the URL's user as the sentinels'; ours is the nodes', as in every
	// other --redis URL.
	o.Username, o.Password, o.SentinelUsername, o.SentinelPassword = o.SentinelUsername, o.SentinelPassword, "", ""
	return o, nil
}

// splitAuth reads envoyproxy/ratelimit's REDIS_AUTH form: "password" or "user:password".
func splitAuth(auth, flag string) (user, pass string, err error) {
	if auth == "" {
		return "", "", nil
	}
	if u, p, ok := strings.Cut(auth, ":"); ok {
		if u == "" || p == "" {
			return "", "", fmt.Errorf("%s: want password or user:password", flag)
		}
		return u, p, nil
	}
	return "", auth, nil
}

// setAuth sets the user and password of --redis-auth, unless the URL has its own: two
// places saying it is refused rather than one silently winning.
func setAuth(dstUser, dstPass *string, user, pass string) error {
	if pass == "" {
		return nil
	}
	if *dstUser != "" || *dstPass != "" {
		return fmt.Errorf("--redis-auth (REDIS_AUTH) beside a password in the --redis URL: give one")
	}
	*dstUser, *dstPass = user, pass
	return nil
}

// withSkipVerify is the TLS config of the flags (nil: no TLS), keeping a URL's
// skip_verify=true (go-redis's: no certificate check at all) from parsed, the config
// go-redis built.
func withSkipVerify(tc, parsed *tls.Config) *tls.Config {
	if tc != nil && parsed != nil && parsed.InsecureSkipVerify {
		tc.InsecureSkipVerify, tc.VerifyPeerCertificate = true, nil
	}
	return tc
}
