package server

import (
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ratekit/limiter/algo"
)

// Config is a loaded rate limit configuration: the domains of one or more YAML files in
// envoyproxy/ratelimit's format. It is immutable once loaded, so a Service swaps whole
// Configs on a reload while calls in flight finish on the one they started with.
type Config struct {
	domains map[string]*domain
	files   []string
	ignored []string
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

// Ignored describes, one line per file, the YAML documents the Config did not read: a
// file's documents after its first, which envoyproxy/ratelimit ignores too. The caller
// logs them; they are not errors, so a file that loads there loads here.
func (c *Config) Ignored() []string { return append([]string(nil), c.ignored...) }

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
	wild  []*node            // key and a value holding '*', in the order of the file
	any   map[string]*node   // key alone: matches any value
}

type entryKey struct{ key, value string }

// node is one descriptor of the configuration.
type node struct {
	key   string
	value string   // as written, '*' included
	parts []string // value split at each '*' when it holds one (a wildcard), else nil
	// detailed_metric: the metrics name the request's values.
	detailed bool
	// value_to_metric: the metrics name the request's value where the config has none
	// (a value-less descriptor, or a wildcard).
	valueToMetric bool
	// share_threshold: every value this wildcard matches is counted under one key.
	shareThreshold bool
	rule           *Rule // nil when this descriptor only holds nested ones
	children       level
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
	// Quota rules (quota_mode) make the overall code OVER_LIMIT only when every quota rule
	// of the request is over its limit and no other rule is; their own status stays
	// OVER_LIMIT.
	Quota bool
	// Charge (ours, rate_limit.charge) makes every hit of the rule count, whatever is
	// left: hits that do not fit are charged (limiter.Charge: the key goes into debt) and
	// answered OVER_LIMIT, even with DenialsSpendNothing, and a look (hits_addend 0) is
	// OVER_LIMIT while nothing is left. It is for usage reported after the fact, such as
	// the tokens Envoy sends with apply_on_stream_done.
	Charge bool
	// Detailed makes the metrics name the request's values for value-less entries.
	Detailed bool
	// Metadata is the descriptor's `metadata:`, sent back in the response's
	// dynamic_metadata when the rule passes (Options.DynamicMetadata).
	Metadata *structpb.Struct
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
	// transient rules (limit overrides) are built for one call.
	transient bool
	// lim is the Limiter a Service decides the rule with (see limiters.of).
	lim atomic.Pointer[ruleLimiter]
	// stat is the rule's statistics path when it names no value of the request (see
	// domain.match): computed by the first call that needs it.
	stat atomic.Pointer[string]
	// counters are the counters of stat (when set) in the Metrics of the Service that
	// last decided the rule (see Service.countersOf).
	counters atomic.Pointer[ruleCountersIn]
}

// ruleCountersIn is a rule's counters in m.
type ruleCountersIn struct {
	m  *Metrics
	rc *ruleCounters
}

// Window is the span over which the rule grants its count.
func (r *Rule) Window() time.Duration { return r.rate.window() }

// match finds the rule for one request descriptor in d, as envoyproxy/ratelimit does: each
// entry is looked up at the level of its position, trying key and value first, then
// wildcard values (in file order), then the key alone; the rule is the one of the
// descriptor the last entry matched, so a request with more (or fewer) entries than the
// configured nesting matches nothing. stat is the rule's metric name for this request
// (envoyproxy/ratelimit's, with detailed_metric, value_to_metric and share_threshold).
// keyed is entries with the value of each entry matched by a share_threshold wildcard
// replaced by the wildcard, so that all its values share one count; it is entries itself
// when there is none.
func (d *domain) match(entries []entry) (r *Rule, stat string, keyed []entry) {
	lv := &d.root
	var found [8]*node
	nodes := found[:0]
	keyed = entries
	cloned := false
	for i, e := range entries {
		n := lv.find(e)
		if n == nil {
			return nil, "", nil
		}
		nodes = append(nodes, n)
		if n.shareThreshold {
			if !cloned {
				keyed, cloned = slices.Clone(entries), true
			}
			keyed[i].value = n.value
		}
		if i == len(entries)-1 {
			if n.rule == nil {
				return nil, "", nil
			}
			return n.rule, n.rule.statFor(d.name, entries, nodes), keyed
		}
		lv = &n.children
	}
	return nil, "", nil
}

// statPath names a rule's statistics for a request as envoyproxy/ratelimit does: the
// domain, then key_value for each entry, where the value is the configured one (a
// wildcard as written) unless the rule's detailed_metric asks for the request's values
// everywhere, or the entry's value_to_metric asks for it where the config has no exact
// value; a share_threshold wildcard is always named as written.
func statPath(domain string, entries []entry, nodes []*node, detailed bool) string {
	value := func(i int) string {
		n := nodes[i]
		switch {
		case n.shareThreshold:
		case detailed, n.valueToMetric && (n.value == "" || n.parts != nil):
			return entries[i].value
		}
		return n.value
	}
	size := len(domain)
	for i, e := range entries {
		size += 2 + len(e.key) + len(value(i))
	}
	var b strings.Builder
	b.Grow(size) // one allocation
	b.WriteString(domain)
	for i, e := range entries {
		b.WriteByte('.')
		b.WriteString(e.key)
		if v := value(i); v != "" {
			b.WriteByte('_')
			b.WriteString(v)
		}
	}
	return b.String()
}

// statFor is r's statistics path for a request whose entries matched nodes (see
// statPath). When the path names none of the request's values it is the same for every
// request that reaches r (one path of nodes leads to a rule, and entries match their
// node's key), and r keeps it instead of building it per call.
func (r *Rule) statFor(domain string, entries []entry, nodes []*node) string {
	for _, n := range nodes {
		if namesRequestValue(n, r.Detailed) {
			return statPath(domain, entries, nodes, r.Detailed)
		}
	}
	if p := r.stat.Load(); p != nil {
		return *p
	}
	stat := statPath(domain, entries, nodes, r.Detailed)
	r.stat.Store(&stat)
	return stat
}

// namesRequestValue reports whether statPath names the request's value for an entry that
// matched n, which may differ from n's value: a value-less or wildcard descriptor with
// detailed_metric or value_to_metric, unless it shares its threshold. (Where statPath
// takes the request's value for an exact descriptor, that value is n's.)
func namesRequestValue(n *node, detailed bool) bool {
	return !n.shareThreshold && (n.value == "" || n.parts != nil) && (detailed || n.valueToMetric)
}

// find returns the descriptor of lv that e matches most specifically, or nil.
func (lv *level) find(e entry) *node {
	if n := lv.exact[entryKey{e.key, e.value}]; n != nil {
		return n
	}
	for _, n := range lv.wild {
		if n.key == e.key && wildcardMatch(n.parts, e.value) {
			return n
		}
	}
	return lv.any[e.key]
}

// wildcardMatch reports whether value matches a pattern split at its '*'s: it starts with
// the first part, ends with the last, and holds the others in order between them, each
// '*' standing for any run of bytes (the empty one too).
func wildcardMatch(parts []string, value string) bool {
	first, last := parts[0], parts[len(parts)-1]
	if len(value) < len(first)+len(last) || !strings.HasPrefix(value, first) || !strings.HasSuffix(value, last) {
		return false
	}
	rest := value[len(first) : len(value)-len(last)]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	return true
}

// entry is one key and value of a request descriptor.
type entry struct{ key, value string }
