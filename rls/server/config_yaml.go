package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/types/known/structpb"

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

// parseSources builds a Config from files already read. Each file's first YAML document
// is its domain; later documents are ignored, as envoyproxy/ratelimit reads a file (one
// yaml.Unmarshal), and named in the Config's Ignored for the logs.
func parseSources(srcs []source) (*Config, error) {
	c := &Config{domains: map[string]*domain{}}
	for _, src := range srcs {
		c.files = append(c.files, src.name)
		dec := yaml.NewDecoder(bytes.NewReader(src.data))
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: %s: the file holds no domain", algo.ErrInvalidConfig, src.name)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", algo.ErrInvalidConfig, src.name, err)
		}
		p := parser{file: src.name}
		d, err := p.domain(&doc)
		if err != nil {
			return nil, err
		}
		if prev, ok := c.domains[d.name]; ok {
			return nil, p.errf(&doc, "domain", "domain %q is also defined in %s", d.name, prev.file)
		}
		c.domains[d.name] = d
		if msg := ignoredDocuments(dec); msg != "" {
			c.ignored = append(c.ignored, src.name+": "+msg)
		}
	}
	return c, nil
}

// ignoredDocuments describes the documents dec holds after the first, or is "" when
// there is none.
func ignoredDocuments(dec *yaml.Decoder) string {
	var lines []string
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			lines = append(lines, "text that is not YAML")
			break
		}
		desc := "line " + itoa(doc.Line)
		if n := &doc; len(n.Content) == 1 && n.Content[0].Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content[0].Content); i += 2 {
				if k, v := n.Content[0].Content[i], n.Content[0].Content[i+1]; k.Value == "domain" {
					desc = fmt.Sprintf("line %d (domain %q)", k.Line, v.Value)
				}
			}
		}
		lines = append(lines, desc)
	}
	if len(lines) == 0 {
		return ""
	}
	return "ignored the YAML documents after the first, at " + strings.Join(lines, ", ") +
		" (envoyproxy/ratelimit reads the first document of a file only; give each domain a file)"
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

// level reads a list of descriptors into lv; a null list (`descriptors:` with nothing
// after it) is an empty one, as envoyproxy/ratelimit reads it.
func (p *parser) level(n *yaml.Node, path string, lv *level, defAlgo, id string) error {
	lv.exact, lv.any = map[entryKey]*node{}, map[string]*node{}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return p.errf(n, path, "want a list of descriptors")
	}
	for i, item := range n.Content {
		field := fmt.Sprintf("%s[%d]", path, i)
		nd, err := p.descriptor(item, field, defAlgo, id)
		if err != nil {
			return err
		}
		switch {
		case nd.parts != nil:
			for _, w := range lv.wild {
				if w.key == nd.key && w.value == nd.value {
					return p.errf(item, field, "duplicate descriptor %s=%s", nd.key, nd.value)
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
	var rl, children, shareNode *yaml.Node
	var shadow, quota bool
	var metadata *structpb.Struct
	err := p.fields(n, path, []string{"key", "value", "rate_limit", "descriptors", "shadow_mode", "detailed_metric",
		"value_to_metric", "share_threshold", "quota_mode", "metadata"}, func(k string, v *yaml.Node) (err error) {
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
		case "value_to_metric":
			nd.valueToMetric, err = p.boolean(v, f)
		case "share_threshold":
			shareNode = v
			nd.shareThreshold, err = p.boolean(v, f)
		case "quota_mode":
			quota, err = p.boolean(v, f)
		case "metadata":
			metadata, err = p.metadata(v, f)
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
	if strings.Contains(nd.value, "*") {
		nd.parts = strings.Split(nd.value, "*")
	}
	if nd.shareThreshold && nd.parts == nil {
		return nil, p.errf(shareNode, joinPath(path, "share_threshold"), "only a wildcard value (one holding '*') can share its threshold, not %q", nd.value)
	}
	if rl != nil {
		if nd.rule, err = p.rule(rl, joinPath(path, "rate_limit"), defAlgo); err != nil {
			return nil, err
		}
		nd.rule.Shadow, nd.rule.Quota, nd.rule.Detailed, nd.rule.Metadata, nd.rule.id = shadow, quota, nd.detailed, metadata, id
	}
	if children != nil {
		if err := p.level(children, joinPath(path, "descriptors"), &nd.children, defAlgo, id); err != nil {
			return nil, err
		}
	}
	return nd, nil
}

// metadata reads a descriptor's `metadata:`, any mapping, as the Struct it is sent back as.
func (p *parser) metadata(n *yaml.Node, field string) (*structpb.Struct, error) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, nil
	}
	var m map[string]any
	if n.Kind != yaml.MappingNode || n.Decode(&m) != nil {
		return nil, p.errf(n, field, "want a mapping")
	}
	st, err := structpb.NewStruct(m)
	if err != nil {
		return nil, p.errf(n, field, "%v", err)
	}
	return st, nil
}
