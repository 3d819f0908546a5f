package server

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ratekit/limiter/algo"
)

// source is one configuration file and its bytes.
type source struct {
	name string
	data []byte
}

// Load reads the configuration at path: one YAML file, or a directory whose *.yaml and
// *.yml files (not those whose names start with '.', such as the "..data" links of a
// Kubernetes ConfigMap) each hold one or more domains. An error wraps
// algo.ErrInvalidConfig and names the file, the line and the field at fault.
func Load(path string) (*Config, error) {
	srcs, err := readSources(path)
	if err != nil {
		return nil, err
	}
	return parseSources(srcs)
}

// readSources reads the files Load parses, in name order.
func readSources(path string) ([]source, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: config: %v", algo.ErrInvalidConfig, err)
	}
	names := []string{path}
	if fi.IsDir() {
		ents, err := os.ReadDir(path)
		if err != nil {
			return nil, fmt.Errorf("%w: config: %v", algo.ErrInvalidConfig, err)
		}
		names = names[:0]
		for _, e := range ents {
			n := e.Name()
			ext := filepath.Ext(n)
			if strings.HasPrefix(n, ".") || (ext != ".yaml" && ext != ".yml") {
				continue
			}
			names = append(names, filepath.Join(path, n))
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("%w: config: no *.yaml or *.yml file in %s", algo.ErrInvalidConfig, path)
		}
	}
	srcs := make([]source, 0, len(names))
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, fmt.Errorf("%w: config: %v", algo.ErrInvalidConfig, err)
		}
		srcs = append(srcs, source{name: n, data: b})
	}
	return srcs, nil
}

// parseSources builds a Config from files already read.
func parseSources(srcs []source) (*Config, error) {
	c := &Config{domains: map[string]*domain{}}
	for _, src := range srcs {
		c.files = append(c.files, src.name)
		dec := yaml.NewDecoder(strings.NewReader(string(src.data)))
		docs := 0
		for {
			var doc yaml.Node
			err := dec.Decode(&doc)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %v", algo.ErrInvalidConfig, src.name, err)
			}
			docs++
			p := parser{file: src.name}
			d, err := p.domain(&doc)
			if err != nil {
				return nil, err
			}
			if prev, ok := c.domains[d.name]; ok {
				return nil, p.errf(&doc, "domain", "domain %q is also defined in %s", d.name, prev.file)
			}
			c.domains[d.name] = d
		}
		if docs == 0 {
			return nil, fmt.Errorf("%w: %s: the file holds no domain", algo.ErrInvalidConfig, src.name)
		}
	}
	return c, nil
}

// parser walks the YAML nodes of one file, so that every error can name its line.
type parser struct{ file string }

func (p *parser) errf(n *yaml.Node, field, format string, args ...any) error {
	return fmt.Errorf("%w: %s:%d: %s: %s", algo.ErrInvalidConfig, p.file, n.Line, field, fmt.Sprintf(format, args...))
}

// fields calls f for each key of the mapping n, refusing keys not in allowed (as
// envoyproxy/ratelimit does: a misspelt key must not silently drop a limit) and
// repeated keys.
func (p *parser) fields(n *yaml.Node, path string, allowed []string, f func(key string, v *yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		return p.errf(n, path, "want a mapping")
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		field := joinPath(path, k.Value)
		if !slices.Contains(allowed, k.Value) {
			return p.errf(k, field, "unknown key (want one of %s)", strings.Join(allowed, ", "))
		}
		if seen[k.Value] {
			return p.errf(k, field, "repeated key")
		}
		seen[k.Value] = true
		if err := f(k.Value, v); err != nil {
			return err
		}
	}
	return nil
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// scalar reads any scalar as a string: `value: 500` is the string "500", as in
// envoyproxy/ratelimit.
func (p *parser) scalar(n *yaml.Node, field string) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", p.errf(n, field, "want a string")
	}
	return n.Value, nil
}

func (p *parser) boolean(n *yaml.Node, field string) (bool, error) {
	var b bool
	if n.Kind != yaml.ScalarNode || n.Decode(&b) != nil {
		return false, p.errf(n, field, "want true or false, got %q", n.Value)
	}
	return b, nil
}

func (p *parser) count(n *yaml.Node, field string, hi uint64) (uint64, error) {
	var u uint64
	if n.Kind != yaml.ScalarNode || n.Decode(&u) != nil || u > hi {
		return 0, p.errf(n, field, "want a whole number in [0, %d], got %q", hi, n.Value)
	}
	return u, nil
}

// domain reads one YAML document: domain, descriptors, and our default algorithm.
func (p *parser) domain(doc *yaml.Node) (*domain, error) {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	d := &domain{file: p.file}
	var descs *yaml.Node
	defAlgo := ""
	err := p.fields(n, "", []string{"domain", "descriptors", "algorithm"}, func(k string, v *yaml.Node) (err error) {
		switch k {
		case "domain":
			d.name, err = p.scalar(v, k)
		case "descriptors":
			descs = v
		case "algorithm":
			defAlgo, err = p.algorithm(v, k)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if d.name == "" {
		return nil, p.errf(n, "domain", "missing or empty")
	}
	if defAlgo == "" {
		defAlgo = defaultAlgorithm
	}
	if descs != nil {
		if err := p.level(descs, "descriptors", &d.root, defAlgo, d.name); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// level reads a list of descriptors into lv.
func (p *parser) level(n *yaml.Node, path string, lv *level, defAlgo, id string) error {
	if n.Kind != yaml.SequenceNode {
		return p.errf(n, path, "want a list of descriptors")
	}
	lv.exact, lv.any = map[entryKey]*node{}, map[string]*node{}
	for i, item := range n.Content {
		field := fmt.Sprintf("%s[%d]", path, i)
		nd, err := p.descriptor(item, field, defAlgo, id)
		if err != nil {
			return err
		}
		switch {
		case nd.prefix:
			for _, w := range lv.wild {
				if w.key == nd.key && w.value == nd.value {
					return p.errf(item, field, "duplicate descriptor %s=%s*", nd.key, nd.value)
				}
			}
			lv.wild = append(lv.wild, nd)
		case nd.value != "":
			k := entryKey{nd.key, nd.value}
			if lv.exact[k] != nil {
				return p.errf(item, field, "duplicate descriptor %s=%s", nd.key, nd.value)
			}
			lv.exact[k] = nd
		default:
			if lv.any[nd.key] != nil {
				return p.errf(item, field, "duplicate descriptor %s (without a value)", nd.key)
			}
			lv.any[nd.key] = nd
		}
	}
	return nil
}

// descriptor reads one descriptor and what it nests. id is the name of the list it is in
// (the domain, then domain.key_value, ...), as envoyproxy/ratelimit names its statistics.
func (p *parser) descriptor(n *yaml.Node, path, defAlgo, id string) (*node, error) {
	nd := &node{}
	var rl, children *yaml.Node
	shadow := false
	err := p.fields(n, path, []string{"key", "value", "rate_limit", "descriptors", "shadow_mode", "detailed_metric"}, func(k string, v *yaml.Node) (err error) {
		f := joinPath(path, k)
		switch k {
		case "key":
			nd.key, err = p.scalar(v, f)
		case "value":
			nd.value, err = p.scalar(v, f)
		case "rate_limit":
			rl = v
		case "descriptors":
			children = v
		case "shadow_mode":
			shadow, err = p.boolean(v, f)
		case "detailed_metric":
			nd.detailed, err = p.boolean(v, f)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if nd.key == "" {
		return nil, p.errf(n, joinPath(path, "key"), "missing or empty")
	}
	id += "." + nd.key
	if nd.value != "" {
		id += "_" + nd.value
	}
	if v, ok := strings.CutSuffix(nd.value, "*"); ok {
		nd.value, nd.prefix = v, true
	}
	if rl != nil {
		if nd.rule, err = p.rule(rl, joinPath(path, "rate_limit"), defAlgo); err != nil {
			return nil, err
		}
		nd.rule.Shadow, nd.rule.Detailed, nd.rule.id = shadow, nd.detailed, id
	}
	if children != nil {
		if err := p.level(children, joinPath(path, "descriptors"), &nd.children, defAlgo, id); err != nil {
			return nil, err
		}
	}
	return nd, nil
}
