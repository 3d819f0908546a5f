package rlheader

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
)

// Policies are the policies of one limiter, as the RateLimit fields describe them: one
// for a limiter of one rule, one per rule for a composite (limiter.All). Its methods are
// safe for concurrent use.
type Policies struct {
	rules []*limiter.Limiter // a composite's rules; nil for one rule
	names []string           // the policies' names, unquoted: one per rule, or the one policy's
}

// New returns the policies of l. A limiter of one rule has one policy, named name
// (DefaultName when empty). Each rule of a composite is a policy named as ruleNames
// says, with name and "-" before it when prefix is true (the caller chose the name).
func New(l *limiter.Limiter, name string, prefix bool) *Policies {
	if name = CleanName(name); name == "" {
		name, prefix = DefaultName, false
	}
	rules := l.Rules()
	if rules == nil {
		return &Policies{names: []string{name}}
	}
	if !prefix {
		name = ""
	}
	return &Policies{rules: rules, names: ruleNames(rules, name)}
}

// Composite reports whether the policies are a composite's rules, whose figures come
// from Trace.
func (p *Policies) Composite() bool { return p.rules != nil }

// ruleNames names each rule of a composite for the RateLimit fields: the name given to
// algo.Named, else one derived from the rule ("fw-100-60s": its state slot's kind, its
// quota and window), else "r" and its position ("r2"). Names are unique; a derived name
// that is taken falls back to the position. prefix (WithPolicyName) and "-" go before each.
// Names are read once, when the middleware is made: a policy's name should not change
// from one response to the next.
func ruleNames(rules []*limiter.Limiter, prefix string) []string {
	names := make([]string, len(rules))
	taken := make(map[string]bool, len(rules))
	for i, r := range rules {
		n := namedName(r.Algorithm())
		if n == "" || taken[n] {
			n = derivedName(r.Algorithm())
		}
		if n == "" || taken[n] {
			n = "r" + strconv.Itoa(i+1)
		}
		taken[n] = true
		names[i] = n
	}
	if prefix != "" {
		for i := range names {
			names[i] = prefix + "-" + names[i]
		}
	}
	return names
}

// namedName is the name given to algo.Named, looking through wrappers; "" when none.
func namedName(a algo.Algorithm) string {
	for a != nil {
		if n, ok := a.(interface{ RuleName() string }); ok {
			return CleanName(n.RuleName())
		}
		u, ok := a.(interface{ Unwrap() algo.Algorithm })
		if !ok {
			break
		}
		a = u.Unwrap()
	}
	return ""
}

// derivedName is "<kind>-<q>-<w>s" for an algorithm with a Quota, where kind is its state
// slot up to the first ':' ("fw", "tb", "gcra"), reduced to the characters of a Structured
// Field key (lower-case letters, digits, '_', '-', '.', '*'); "<kind>-<q>" without a window;
// "" when the algorithm states no quota or its kind is empty.
func derivedName(a algo.Algorithm) string {
	q, ok := algo.QuotaOf(a)
	if !ok || a == nil {
		return ""
	}
	kind, _, _ := strings.Cut(a.Slot(), ":")
	var b []byte
	for i := 0; i < len(kind); i++ {
		switch c := kind[i]; {
		case c >= 'A' && c <= 'Z':
			b = append(b, c+'a'-'A')
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_', c == '-', c == '.', c == '*':
			b = append(b, c)
		}
	}
	if len(b) == 0 || (b[0] >= '0' && b[0] <= '9') || b[0] == '_' || b[0] == '-' || b[0] == '.' {
		return ""
	}
	b = append(b, '-')
	b = strconv.AppendInt(b, q.Limit, 10)
	if w, ok := policyWindow(a); ok {
		b = append(b, '-')
		b = strconv.AppendInt(b, w, 10)
		b = append(b, 's')
	}
	return string(b)
}

// CleanName drops the characters an sf-string cannot hold (outside printable ASCII).
func CleanName(name string) string {
	b := make([]byte, 0, len(name))
	for i := 0; i < len(name); i++ {
		if c := name[i]; c >= 0x20 && c <= 0x7e {
			b = append(b, c)
		}
	}
	return string(b)
}

// Figures holds each rule's own Decision for one request of a composite, as
// limiter.TraceRules reports them; ok[i] is false for a rule the request did not reach.
type Figures struct {
	ds []algo.Decision
	ok []bool
	n  int64 // the request's cost
}

// Trace returns the context under which a composite's request of cost n reports its
// rules' figures into f; nil f for one rule, which needs none. The rules are matched by
// identity, so a Fallback composite's rules, also reported, are ignored.
func (p *Policies) Trace(ctx context.Context, n int64) (context.Context, *Figures) {
	if p.rules == nil {
		return ctx, nil
	}
	f := &Figures{ds: make([]algo.Decision, len(p.rules)), ok: make([]bool, len(p.rules)), n: n}
	return limiter.TraceRules(ctx, func(r *limiter.Limiter, d limiter.Decision) {
		if i := slices.Index(p.rules, r); i >= 0 {
			f.ds[i], f.ok[i] = d, true
		}
	}), f
}

// Items describes the response to decision d (of algorithm a, for one rule; of the rules'
// figures f, for a composite), one item per policy. waited is how long a WithWait request
// waited. On a denial each RateLimit t is at most Retry-After, as the draft's Section 6
// asks: a rule that would have granted says how much is left within that time.
func (p *Policies) Items(a algo.Algorithm, d algo.Decision, f *Figures, waited time.Duration) []Item {
	if p.rules == nil {
		w, _ := policyWindow(a)
		it := Item{Name: QuoteName(p.names[0]), Q: d.Limit, W: w, R: d.Remaining, T: resetSeconds(d, waited), HasR: true}
		if !d.Allowed {
			it.T = denialSeconds(d)
		}
		return []Item{it}
	}
	retry := denialSeconds(d)
	out := make([]Item, 0, len(p.rules))
	for i, r := range p.rules {
		ra := r.Algorithm()
		w, _ := policyWindow(ra)
		it := Item{Name: QuoteName(p.names[i]), W: w, T: -1}
		switch {
		case f != nil && f.ok[i]:
			rd := f.ds[i]
			it.Q, it.R, it.HasR = rd.Limit, rd.Remaining, true
			switch {
			case d.Allowed:
				it.T = resetSeconds(rd, waited)
			case !rd.Allowed:
				it.T = denialSeconds(rd)
			default: // granted, then given back: within Retry-After at most r are left
				// The refund gave its cost back (the Decision predates it).
				it.R = rd.Limit
				if f.n < rd.Limit-rd.Remaining {
					it.R = rd.Remaining + f.n
				}
				it.T = resetSeconds(rd, 0)
				if retry >= 0 && (it.T < 0 || it.T > retry) {
					it.T = retry
				}
			}
		default:
			q, ok := algo.QuotaOf(ra)
			if !ok {
				continue // nothing to say about this rule
			}
			it.Q = q.Limit
		}
		out = append(out, it)
	}
	return out
}

// denialSeconds is the RateLimit t of a denied decision: Retry-After's value, or -1 (left
// out) when no wait would help.
func denialSeconds(d algo.Decision) int64 {
	if d.RetryAfter == algo.Never {
		return -1
	}
	return RetryAfterSeconds(d.RetryAfter)
}

// Violated lists the names of the policies that denied a request (problem details'
// violated-policies): the one policy, or each rule of a composite whose figures f say it
// denied.
func (p *Policies) Violated(f *Figures) []string {
	if p.rules == nil {
		return []string{p.names[0]}
	}
	var out []string
	for i := range p.rules {
		if f != nil && f.ok[i] && !f.ds[i].Allowed {
			out = append(out, p.names[i])
		}
	}
	return out
}

// PartitionKey is the pk parameter for key: the first 16 bytes of HMAC-SHA-256(secret,
// key) as a Structured Field Byte Sequence (":base64:"); "" when secret is nil. The key
// itself (an address, an API key) is never sent (the draft's Section 6.1).
func PartitionKey(secret []byte, key string) string {
	if secret == nil {
		return ""
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(key))
	sum := m.Sum(nil)[:16]
	b := make([]byte, 0, 2+base64.StdEncoding.EncodedLen(len(sum)))
	b = append(b, ':')
	b = base64.StdEncoding.AppendEncode(b, sum)
	return string(append(b, ':'))
}
