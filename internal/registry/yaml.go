package registry

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// maxNodes bounds the YAML nodes converted to JSON values in one file and
// maxDepth their nesting, so that aliases cannot blow a small file up into
// a huge (or endless) schema.
const (
	maxNodes = 100_000
	maxDepth = 64
)

// parser collects the problems of one registry file.
type parser struct {
	file   string
	getenv func(string) string
	probs  Problems
	seen   map[Problem]bool
	budget int
}

// where places a problem: the tool it belongs to, and a prefix for the
// field ("providers[0].") when it belongs to no tool with a name.
type where struct{ tool, prefix string }

func (p *parser) add(line int, w where, field, why string) {
	p.addProblem(Problem{File: p.file, Line: line, Tool: w.tool, Field: w.prefix + field, Why: why})
}

func (p *parser) addProblem(pr Problem) {
	if p.seen[pr] { // an aliased node is read once per use
		return
	}
	p.seen[pr] = true
	p.probs = append(p.probs, pr)
}

func (p *parser) addAt(n *yaml.Node, w where, field, why string) {
	p.add(lineOf(n), w, field, why)
}

func lineOf(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	return n.Line
}

// document parses data into its root node; nil for an empty file.
func (p *parser) document(data []byte) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if !errors.Is(err, io.EOF) {
			p.yamlError(err)
		}
		return nil
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		line := extra.Line
		if len(extra.Content) > 0 {
			line = extra.Content[0].Line
		}
		p.add(line, where{}, "", "only one YAML document is allowed")
	case !errors.Is(err, io.EOF):
		p.yamlError(err)
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		return doc.Content[0]
	}
	return nil
}

var yamlLine = regexp.MustCompile(`^line (\d+): (.*)$`)

// yamlError turns a YAML syntax error into a problem with its line.
func (p *parser) yamlError(err error) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.Join(strings.Fields(msg), " ")
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	p.add(line, where{}, "", "invalid YAML: "+msg)
}

// deref follows aliases to the node they name.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	n = deref(n)
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// pair is one key and value of a mapping.
type pair struct{ key, val *yaml.Node }

// pairs returns the entries of a mapping in order, with merge keys (<<)
// resolved: a key given explicitly wins over a merged one. Duplicate keys,
// keys that are not scalars and bad merges are problems; field prefixes the
// key in those problems.
func (p *parser) pairs(n *yaml.Node, w where, field string) []pair {
	var out []pair
	first := map[string]int{} // key → line of its first occurrence
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if dk := deref(k); dk == nil || dk.Kind != yaml.ScalarNode {
			p.addAt(k, w, strings.TrimRight(field, "./"), "keys must be strings")
			continue
		} else {
			k = dk
		}
		if line, dup := first[k.Value]; dup {
			p.addAt(k, w, field+k.Value, fmt.Sprintf("duplicate key (first at line %d)", line))
			continue
		}
		first[k.Value] = k.Line
		out = append(out, pair{k, v})
	}
	for _, m := range merges {
		for _, src := range p.mergeSources(m, w, field, map[*yaml.Node]bool{n: true}) {
			for i := 0; i+1 < len(src.Content); i += 2 {
				k := deref(src.Content[i])
				if k == nil || k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" {
					continue
				}
				if _, dup := first[k.Value]; dup {
					continue
				}
				first[k.Value] = k.Line
				out = append(out, pair{k, src.Content[i+1]})
			}
		}
	}
	return out
}

// mergeSources lists the mappings a merge key's value brings in, nested
// merges included, nearest first.
func (p *parser) mergeSources(v *yaml.Node, w where, field string, visiting map[*yaml.Node]bool) []*yaml.Node {
	bad := func() []*yaml.Node {
		p.addAt(v, w, field+"<<", "must be a mapping or a list of mappings")
		return nil
	}
	var srcs []*yaml.Node
	d := deref(v)
	switch {
	case d == nil:
		return bad()
	case d.Kind == yaml.MappingNode:
		srcs = []*yaml.Node{d}
	case d.Kind == yaml.SequenceNode:
		for _, it := range d.Content {
			if it = deref(it); it == nil || it.Kind != yaml.MappingNode {
				return bad()
			}
			srcs = append(srcs, it)
		}
	default:
		return bad()
	}
	var out []*yaml.Node
	for _, s := range srcs {
		if visiting[s] {
			p.addAt(v, w, field+"<<", "merge refers to itself")
			continue
		}
		visiting[s] = true
		out = append(out, s)
		for i := 0; i+1 < len(s.Content); i += 2 {
			if k := s.Content[i]; k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
				out = append(out, p.mergeSources(s.Content[i+1], w, field, visiting)...)
			}
		}
		delete(visiting, s)
	}
	return out
}

// entry is a known key of a mapping; val is nil when the key is absent or
// its value is null.
type entry struct{ key, val *yaml.Node }

// fields reads a mapping whose keys must be among known: other keys and
// duplicates are problems.
func (p *parser) fields(n *yaml.Node, w where, known ...string) map[string]entry {
	out := map[string]entry{}
	for _, kv := range p.pairs(n, w, "") {
		name := kv.key.Value
		if !contains(known, name) {
			p.addAt(kv.key, w, name, "unknown key")
			continue
		}
		e := entry{key: kv.key}
		if !isNull(kv.val) {
			e.val = deref(kv.val)
			if kv.val.Kind == yaml.AliasNode {
				// Point problems at the use, not at the anchor.
				c := *e.val
				c.Line = kv.val.Line
				e.val = &c
			}
		}
		out[name] = e
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// required reports a missing field at the key (when its value is null) or
// at the mapping that lacks it.
func (p *parser) required(e entry, parent *yaml.Node, w where, field string) bool {
	if e.val != nil {
		return true
	}
	line := lineOf(parent)
	if e.key != nil {
		line = e.key.Line
	}
	p.add(line, w, field, "required")
	return false
}

// str reads a string field; any scalar counts, by its text.
func (p *parser) str(e entry, w where, field string) (string, bool) {
	if e.val == nil {
		return "", false
	}
	if e.val.Kind != yaml.ScalarNode {
		p.addAt(e.val, w, field, "must be a string")
		return "", false
	}
	return e.val.Value, true
}

func (p *parser) boolean(e entry, w where, field string) (v, ok bool) {
	if e.val == nil {
		return false, false
	}
	if e.val.Kind != yaml.ScalarNode || e.val.ShortTag() != "!!bool" || e.val.Decode(&v) != nil {
		p.addAt(e.val, w, field, "must be true or false")
		return false, false
	}
	return v, true
}

func (p *parser) integer(e entry, w where, field string) (v int, ok bool) {
	if e.val == nil {
		return 0, false
	}
	if e.val.Kind != yaml.ScalarNode || e.val.ShortTag() != "!!int" || e.val.Decode(&v) != nil {
		p.addAt(e.val, w, field, "must be an integer")
		return 0, false
	}
	return v, true
}

// list reads a sequence field.
func (p *parser) list(e entry, w where, field string) []*yaml.Node {
	if e.val == nil {
		return nil
	}
	if e.val.Kind != yaml.SequenceNode {
		p.addAt(e.val, w, field, "must be a list")
		return nil
	}
	return e.val.Content
}

// toJSON converts a YAML value to the values encoding/json produces:
// map[string]any, []any, string, float64, bool and nil. lines records the
// line of every value by its JSON pointer below field.
func (p *parser) toJSON(n *yaml.Node, ptr string, depth int, lines map[string]int, w where, field string) (any, bool) {
	if depth > maxDepth {
		p.addAt(n, w, field, fmt.Sprintf("too deeply nested or aliased (more than %d levels)", maxDepth))
		return nil, false
	}
	if p.budget <= 0 {
		if p.budget == 0 {
			p.addAt(n, w, field, fmt.Sprintf("too deeply nested or aliased (more than %d values)", maxNodes))
			p.budget--
		}
		return nil, false
	}
	p.budget--
	lines[ptr] = n.Line
	d := deref(n)
	if d == nil {
		p.addAt(n, w, field+ptr, "unresolved alias")
		return nil, false
	}
	switch d.Kind {
	case yaml.MappingNode:
		m := map[string]any{}
		ok := true
		for _, kv := range p.pairs(d, w, field+ptr+"/") {
			kp := ptr + "/" + escapePtr(kv.key.Value)
			v, vok := p.toJSON(kv.val, kp, depth+1, lines, w, field)
			ok = ok && vok
			m[kv.key.Value] = v
		}
		return m, ok
	case yaml.SequenceNode:
		s := make([]any, 0, len(d.Content))
		ok := true
		for i, it := range d.Content {
			v, vok := p.toJSON(it, ptr+"/"+strconv.Itoa(i), depth+1, lines, w, field)
			ok = ok && vok
			s = append(s, v)
		}
		return s, ok
	case yaml.ScalarNode:
		switch d.ShortTag() {
		case "!!null":
			return nil, true
		case "!!bool":
			var b bool
			if d.Decode(&b) == nil {
				return b, true
			}
		case "!!int", "!!float":
			var f float64
			if err := d.Decode(&f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				p.addAt(n, w, field+ptr, "must be a finite number")
				return nil, false
			}
			return f, true
		}
		// Strings, and anything else by its text (timestamps, custom tags).
		return d.Value, true
	}
	p.addAt(n, w, field+ptr, "unsupported YAML value")
	return nil, false
}

// escapePtr escapes a JSON pointer token (RFC 6901).
func escapePtr(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}
