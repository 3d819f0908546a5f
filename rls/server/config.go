package server

import (
	"strings"
	"time"

	"github.com/ratekit/limiter/algo"
)

// Config is a loaded rate limit configuration: the domains of one or more YAML files in
// envoyproxy/ratelimit's format. It is immutable once loaded, so a Service swaps whole
// Configs on a reload while calls in flight finish on the one they started with.
type Config struct {
	domains map[string]*domain
	files   []string
}

// Domains returns the names of the configured domains, for logs.
func (c *Config) Domains() []string {
	names := make([]string, 0, len(c.domains))
	for name := range c.domains {
		names = append(names, name)
	}
	return names
}

// Files returns the files the Config was loaded from.
func (c *Config) Files() []string { return append([]string(nil), c.files...) }

// domain is one `domain:` of a file with its tree of descriptors.
type domain struct {
	name string
	file string
	root level
}

// level is one list of descriptors: the entries of a request descriptor are matched one
// level at a time, the first entry against the domain's list, the next against the nested
// list of the descriptor it matched, and so on.
type level struct {
	exact map[entryKey]*node // key and value
	wild  []*node            // key and a value ending in '*', in the order of the file
	any   map[string]*node   // key alone: matches any value
}

type entryKey struct{ key, value string }

// node is one descriptor of the configuration.
type node struct {
	key      string
	value    string // without the trailing '*' when prefix is set
	prefix   bool
	detailed bool  // detailed_metric: name the request's value in metrics
	rule     *Rule // nil when this descriptor only holds nested ones
	children level
}

// Rule is the limit of one configured descriptor.
type Rule struct {
	// Name is rate_limit.name, which replaces entries refer to.
	Name string
	// Replaces are the names of the rules this one switches off when both match.
	Replaces []string
	// Unlimited rules are answered OK at once, without a store call.
	Unlimited bool
	// Shadow rules are decided and counted, but always answered OK.
	Shadow bool
	// Detailed makes the metrics name the request's values for value-less entries.
	Detailed bool
	// Rate is the limit: Count requests per Multiplier × Unit. A Count of 0 denies all.
	rate rate
	// Algorithm decides the rule; nil when Unlimited or when Count is 0.
	Algorithm algo.Algorithm
	// id names the rule in metrics and headers: domain.key_value.key, as
	// envoyproxy/ratelimit names its statistics.
	id string
	// file and line locate the rule for logs.
	file string
	line int
}

// Window is the span over which the rule grants its count.
func (r *Rule) Window() time.Duration { return r.rate.window() }

// match finds the rule for one request descriptor in d, as envoyproxy/ratelimit does: each
// entry is looked up at the level of its position, trying key and value first, then
// wildcard values, then the key alone; the rule is the one of the descriptor the last
// entry matched, so a request with more (or fewer) entries than the configured nesting
// matches nothing. stat is the rule's metric name for this request (with the request's
// values where the rule asks for detailed metrics).
func (d *domain) match(entries []entry) (r *Rule, stat string) {
	lv := &d.root
	var path strings.Builder
	path.WriteString(d.name)
	for i, e := range entries {
		n := lv.find(e)
		if n == nil {
			return nil, ""
		}
		path.WriteByte('.')
		path.WriteString(e.key)
		switch {
		case n.value != "" || n.prefix:
			path.WriteByte('_')
			path.WriteString(n.value)
			if n.prefix {
				path.WriteByte('*')
			}
		case n.detailed:
			path.WriteByte('_')
			path.WriteString(e.value)
		}
		if i == len(entries)-1 {
			if n.rule == nil {
				return nil, ""
			}
			return n.rule, path.String()
		}
		lv = &n.children
	}
	return nil, ""
}

// find returns the descriptor of lv that e matches most specifically, or nil.
func (lv *level) find(e entry) *node {
	if n := lv.exact[entryKey{e.key, e.value}]; n != nil {
		return n
	}
	for _, n := range lv.wild {
		if n.key == e.key && strings.HasPrefix(e.value, n.value) {
			return n
		}
	}
	return lv.any[e.key]
}

// entry is one key and value of a request descriptor.
type entry struct{ key, value string }
