package server

import (
	"math"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ratekit/limiter/algo"
)

// rule reads a rate_limit block: envoyproxy/ratelimit's unit, requests_per_unit,
// unit_multiplier, unlimited, name and replaces, and our extensions rate, algorithm,
// burst and charge.
func (p *parser) rule(n *yaml.Node, path, defAlgo string) (*Rule, error) {
	r := &Rule{file: p.file, line: n.Line}
	var (
		unitNode, rpuNode, rateNode, multNode, burstNode, chargeNode *yaml.Node
		algoName                                                     = defAlgo
		burst                                                        uint64
	)
	err := p.fields(n, path, []string{"unit", "requests_per_unit", "unit_multiplier", "unlimited", "name", "replaces", "rate", "algorithm", "burst", "charge"}, func(k string, v *yaml.Node) (err error) {
		f := joinPath(path, k)
		switch k {
		case "unit":
			unitNode = v
			var s string
			if s, err = p.scalar(v, f); err == nil {
				u, ok := unitNames[strings.ToLower(s)]
				if !ok {
					return p.errf(v, f, "%q is not one of second, minute, hour, day, week, month, year", s)
				}
				r.rate.unit = u
			}
		case "requests_per_unit":
			rpuNode = v
			var c uint64
			c, err = p.count(v, f, maxCount)
			r.rate.count = int64(c)
		case "unit_multiplier":
			multNode = v
			var m uint64
			if m, err = p.count(v, f, math.MaxUint32); err == nil && m == 0 {
				err = p.errf(v, f, "must be at least 1")
			}
			r.rate.multiplier = uint32(m)
		case "unlimited":
			r.Unlimited, err = p.boolean(v, f)
		case "name":
			if r.Name, err = p.scalar(v, f); err == nil && r.Name == "" {
				err = p.errf(v, f, "empty")
			}
		case "replaces":
			r.Replaces, err = p.replaces(v, f)
		case "rate":
			rateNode = v
			var s string
			if s, err = p.scalar(v, f); err == nil {
				var rt rate
				if rt, err = parseRate(s); err != nil {
					return p.errf(v, f, "%s", strings.TrimPrefix(err.Error(), algo.ErrInvalidConfig.Error()+": "))
				}
				r.rate = rt
			}
		case "algorithm":
			algoName, err = p.algorithm(v, f)
		case "burst":
			burstNode = v
			if burst, err = p.count(v, f, maxCount); err == nil && burst == 0 {
				err = p.errf(v, f, "must be at least 1")
			}
		case "charge":
			if r.Charge, err = p.boolean(v, f); r.Charge {
				chargeNode = v
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, name := range r.Replaces {
		if r.Name != "" && name == r.Name {
			return nil, p.errf(n, joinPath(path, "replaces"), "replaces its own rule %q (envoyproxy/ratelimit: replaces should not contain name of same descriptor)", name)
		}
	}
	switch {
	case r.Unlimited:
		// A requests_per_unit beside it is ignored, as envoyproxy/ratelimit ignores it;
		// a unit is refused there, and so is ours.
		for _, x := range []struct {
			n    *yaml.Node
			name string
		}{{unitNode, "unit"}, {rateNode, "rate"}, {multNode, "unit_multiplier"}, {burstNode, "burst"}, {chargeNode, "charge"}} {
			if x.n != nil {
				return nil, p.errf(x.n, joinPath(path, x.name), "not allowed with unlimited: true")
			}
		}
		return r, nil
	case rateNode != nil:
		for _, x := range []struct {
			n    *yaml.Node
			name string
		}{{unitNode, "unit"}, {rpuNode, "requests_per_unit"}, {multNode, "unit_multiplier"}} {
			if x.n != nil {
				return nil, p.errf(x.n, joinPath(path, x.name), "not allowed beside rate (a rate string says both)")
			}
		}
	case unitNode == nil:
		return nil, p.errf(n, joinPath(path, "unit"), "missing (want second, minute, hour or day; or our rate: 100/min)")
	}
	if r.rate.multiplier == 0 {
		r.rate.multiplier = 1
	}
	if rateNode == nil {
		if _, err := newRate(r.rate.count, r.rate.unit, uint64(r.rate.multiplier)); err != nil {
			at := multNode
			if at == nil {
				at = n
			}
			return nil, p.errf(at, joinPath(path, "unit_multiplier"), "%v", err)
		}
	}
	if _, hasBurst, _ := algorithmName(algoName); burstNode != nil && !hasBurst {
		return nil, p.errf(burstNode, joinPath(path, "burst"), "only %s have a burst (the algorithm is %s)", burstAlgorithms(), algoName)
	}
	if r.rate.count == 0 {
		if r.Charge {
			return nil, p.errf(chargeNode, joinPath(path, "charge"), "not allowed with requests_per_unit: 0 (it denies every request: nothing to charge)")
		}
		return r, nil // denies every request: no algorithm needed
	}
	if r.Algorithm, err = buildAlgorithm(algoName, r.rate, int64(burst)); err != nil {
		return nil, p.errf(n, path, "%v", err)
	}
	if r.Charge && !chargeable(r.Algorithm) {
		return nil, p.errf(chargeNode, joinPath(path, "charge"), "the algorithm %s cannot charge (it does not state algo.Chargeable)", algoName)
	}
	return r, nil
}

// replaces reads `replaces: [{name: x}, ...]`.
func (p *parser) replaces(n *yaml.Node, path string) ([]string, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, path, "want a list of {name: ...}")
	}
	var names []string
	for i, item := range n.Content {
		f := path + "[" + itoa(i) + "]"
		name := ""
		err := p.fields(item, f, []string{"name"}, func(_ string, v *yaml.Node) (err error) {
			name, err = p.scalar(v, f+".name")
			return err
		})
		if err != nil {
			return nil, err
		}
		if name == "" {
			return nil, p.errf(item, f+".name", "missing or empty")
		}
		names = append(names, name)
	}
	return names, nil
}

// algorithm reads a value of `algorithm:` and returns algo's name for it.
func (p *parser) algorithm(n *yaml.Node, field string) (string, error) {
	s, err := p.scalar(n, field)
	if err != nil {
		return "", err
	}
	name, _, ok := algorithmName(s)
	if !ok {
		return "", p.errf(n, field, "unknown algorithm %q (want one of %s)", s, algorithmList())
	}
	return name, nil
}

// chargeable reports whether a records a charge (algo.Chargeable): a hit past what is left
// goes into debt rather than being refused.
func chargeable(a algo.Algorithm) bool {
	return algo.CapabilitiesOf(a)&algo.Chargeable != 0
}
