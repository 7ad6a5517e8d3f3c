package registry

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
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

// parser collects the problems of one registry file. Every problem is
// placed by the JSON pointer of its value in the file (the schema's
// instance location); the positions of the YAML nodes give its line.
type parser struct {
	file    string
	getenv  func(string) string
	pending []pending
	budget  int
	schema  *registrySchema

	val      any                 // the file as JSON values; invalid values are pruned after the schema check
	lines    map[string]int      // pointer → line of its value
	keyLines map[string]int      // pointer → line of its key (also for keys whose value is null)
	arrays   map[string]bool     // pointers of lists
	order    map[string][]string // pointer of a mapping → its keys in file order
	texts    map[string]string   // pointer of a number or bool → its text in the file
	broken   map[string]bool     // pointers of values the conversion could not make
	names    map[string]string   // "/tools/3" → that item's name, to label its problems
}

// pending is a problem before it is rendered: its place is a pointer,
// rendered once the names of the file's items are known.
type pending struct {
	line     int
	ptr      string
	suffix   string // appended to the rendered field as is ("/properties/x")
	why      string
	unsetEnv string
}

func newParser(file string, getenv func(string) string, schema *registrySchema) *parser {
	return &parser{file: file, getenv: getenv, budget: maxNodes, schema: schema,
		lines: map[string]int{}, keyLines: map[string]int{}, arrays: map[string]bool{}, order: map[string][]string{},
		texts: map[string]string{}, broken: map[string]bool{}, names: map[string]string{}}
}

// at reports a problem of the value at ptr, on its line.
func (p *parser) at(ptr, why string) { p.atLine(p.line(ptr), ptr, why) }

// dup says whether the value at ptr is one seen before in seen (value →
// the line it was first at), and reports it as a duplicate naming that
// line; a new value is recorded. An empty value is never a duplicate
// (its absence is reported elsewhere).
func (p *parser) dup(seen map[string]int, ptr string) bool {
	v := p.str(ptr)
	if v == "" {
		return false
	}
	if line, ok := seen[v]; ok {
		p.at(ptr, fmt.Sprintf("duplicate %s (first at line %d)", ptr[strings.LastIndexByte(ptr, '/')+1:], line))
		return true
	}
	seen[v] = p.line(ptr)
	return false
}

// atKey reports a problem of the key of ptr, on the key's line.
func (p *parser) atKey(ptr, why string) {
	line, ok := p.keyLines[ptr]
	if !ok {
		line = p.line(ptr)
	}
	p.atLine(line, ptr, why)
}

func (p *parser) atLine(line int, ptr, why string) {
	p.pending = append(p.pending, pending{line: line, ptr: ptr, why: why})
}

// line is the line of the value at ptr, or of its nearest ancestor.
func (p *parser) line(ptr string) int {
	for {
		if l, ok := p.lines[ptr]; ok && l > 0 {
			return l
		}
		if l, ok := p.keyLines[ptr]; ok && l > 0 {
			return l
		}
		i := strings.LastIndexByte(ptr, '/')
		if i < 0 {
			return 0
		}
		ptr = ptr[:i]
	}
}

// document parses data into its root node; nil for an empty file.
func (p *parser) document(data []byte) *yaml.Node {
	doc, err := decodeOne(data)
	if err != nil {
		p.yamlError(err, data)
	}
	if doc != nil && doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		return doc.Content[0]
	}
	return nil
}

// errExtraDocument is a second YAML document in the file.
type errExtraDocument struct{ line int }

func (e errExtraDocument) Error() string { return "only one YAML document is allowed" }

// decodeOne decodes the one document of data (nil for an empty file): a
// syntax error in it or after it, or a second document, is the error.
func decodeOne(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		line := extra.Line
		if len(extra.Content) > 0 {
			line = extra.Content[0].Line
		}
		return &doc, errExtraDocument{line: line}
	case !errors.Is(err, io.EOF):
		return &doc, err
	}
	return &doc, nil
}

var yamlLine = regexp.MustCompile(`^line (\d+): (.*)$`)

// yamlError turns a YAML syntax error of data into a problem on the line
// at fault. The YAML library's "line N" is not always that line: for a
// parser error it is where the construct that failed began, counted from
// 0 (an unclosed '{' is put on the line before the brace; a key indented
// wrongly in a list on the line before the list). The line at fault is
// found as the first line of data whose text up to it fails with the same
// error: the parse stops at the first token it cannot take, so every
// longer prefix fails alike and every shorter one does not (bisection).
func (p *parser) yamlError(err error, data []byte) {
	var extra errExtraDocument
	if errors.As(err, &extra) {
		p.atLine(extra.line, "", extra.Error())
		return
	}
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.Join(strings.Fields(msg), " ")
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	if l := failingLine(data, err.Error()); l > 0 {
		line = l
	}
	switch {
	case strings.HasSuffix(msg, "expected ',' or '}'"):
		msg += " (a '{' not closed?)"
	case strings.HasSuffix(msg, "expected ',' or ']'"):
		msg += " (a '[' not closed?)"
	case msg == "did not find expected '-' indicator" || msg == "did not find expected key":
		msg += " (wrong indentation?)"
	case msg == "found unexpected end of stream":
		// A quoted value runs to the end of the file: its closing quote
		// is missing (the line is where it opened).
		msg += " (a quote not closed?)"
	case msg == "mapping values are not allowed in this context":
		// A key indented more than the one above it continues that key's
		// plain value, whose ": " is then the error; so does a value with
		// ": " in it.
		msg += " (a key indented more than the one above it, or a value with \": \" in it to quote?)"
	}
	p.atLine(line, "", "invalid YAML: "+msg)
}

// failingLine is the 1-based number of the first line of data whose text
// up to and including it fails to decode with the error text want; 0 when
// none does (the whole of data does not).
func failingLine(data []byte, want string) int {
	var ends []int // the end of each line, after its newline
	for i, b := range data {
		if b == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(ends) == 0 || ends[len(ends)-1] != len(data) {
		ends = append(ends, len(data))
	}
	same := func(i int) bool {
		_, err := decodeOne(data[:ends[i]])
		return err != nil && err.Error() == want
	}
	i := sort.Search(len(ends), same)
	if i == len(ends) || !same(i) {
		return 0
	}
	return i + 1
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

// pairs returns the entries of the mapping at ptr in order, with merge
// keys (<<) resolved: a key given explicitly wins over a merged one.
// Duplicate keys, keys that are not scalars and bad merges are problems.
func (p *parser) pairs(n *yaml.Node, ptr string) []pair {
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
			p.atLine(lineOf(k), ptr, "keys must be strings")
			continue
		} else {
			k = dk
		}
		if line, dup := first[k.Value]; dup {
			p.atLine(k.Line, ptr+"/"+escapePtr(k.Value), fmt.Sprintf("duplicate key (first at line %d)", line))
			continue
		}
		first[k.Value] = k.Line
		out = append(out, pair{k, v})
	}
	for _, m := range merges {
		for _, src := range p.mergeSources(m, ptr, map[*yaml.Node]bool{n: true}) {
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
func (p *parser) mergeSources(v *yaml.Node, ptr string, visiting map[*yaml.Node]bool) []*yaml.Node {
	bad := func() []*yaml.Node {
		p.atLine(lineOf(v), ptr+"/<<", "must be a mapping or a list of mappings")
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
			p.atLine(lineOf(v), ptr+"/<<", "merge refers to itself")
			continue
		}
		visiting[s] = true
		out = append(out, s)
		for i := 0; i+1 < len(s.Content); i += 2 {
			if k := s.Content[i]; k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
				out = append(out, p.mergeSources(s.Content[i+1], ptr, visiting)...)
			}
		}
		delete(visiting, s)
	}
	return out
}

func lineOf(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	return n.Line
}

// toJSON converts a YAML value to the values encoding/json produces:
// map[string]any, []any, string, float64, bool and nil, recording the
// line of every value (and key) by its JSON pointer. A key of the registry
// whose value is null counts as absent, as it always has; below a
// free-form value (a tool's JSON Schema, a view's defaults) null is data.
func (p *parser) toJSON(n *yaml.Node, ptr string, depth int, free bool) any {
	if depth > maxDepth {
		p.broken[ptr] = true
		p.atLine(lineOf(n), ptr, fmt.Sprintf("too deeply nested or aliased (more than %d levels)", maxDepth))
		return nil
	}
	if p.budget <= 0 {
		if p.budget == 0 {
			p.atLine(lineOf(n), ptr, fmt.Sprintf("too deeply nested or aliased (more than %d values)", maxNodes))
			p.budget--
		}
		p.broken[ptr] = true
		return nil
	}
	p.budget--
	p.lines[ptr] = n.Line
	d := deref(n)
	if d == nil {
		p.broken[ptr] = true
		p.atLine(n.Line, ptr, "unresolved alias")
		return nil
	}
	switch d.Kind {
	case yaml.MappingNode:
		m := map[string]any{}
		for _, kv := range p.pairs(d, ptr) {
			name := kv.key.Value
			kp := ptr + "/" + escapePtr(name)
			p.keyLines[kp] = kv.key.Line
			if !free && isNull(kv.val) && p.schema.declared[name] {
				continue
			}
			p.order[ptr] = append(p.order[ptr], name)
			m[name] = p.toJSON(kv.val, kp, depth+1, free || p.schema.free[name])
		}
		return m
	case yaml.SequenceNode:
		p.arrays[ptr] = true
		s := make([]any, 0, len(d.Content))
		for i, it := range d.Content {
			s = append(s, p.toJSON(it, ptr+"/"+strconv.Itoa(i), depth+1, free))
		}
		return s
	case yaml.ScalarNode:
		switch d.ShortTag() {
		case "!!null":
			return nil
		case "!!bool":
			var b bool
			if d.Decode(&b) == nil {
				p.texts[ptr] = d.Value
				return b
			}
		case "!!int", "!!float":
			var f float64
			if err := d.Decode(&f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				p.broken[ptr] = true
				p.atLine(n.Line, ptr, "must be a finite number")
				return nil
			}
			p.texts[ptr] = d.Value
			return f
		}
		// Strings, and anything else by its text (timestamps, custom tags).
		return d.Value
	}
	p.broken[ptr] = true
	p.atLine(n.Line, ptr, "unsupported YAML value")
	return nil
}

// escapePtr escapes a JSON pointer token (RFC 6901).
func escapePtr(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

func unescapePtr(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
}

// splitPtr splits a JSON pointer into its unescaped tokens.
func splitPtr(ptr string) []string {
	if ptr == "" {
		return nil
	}
	toks := strings.Split(ptr[1:], "/")
	for i, t := range toks {
		toks[i] = unescapePtr(t)
	}
	return toks
}

// lookup finds the value at ptr in v.
func lookup(v any, ptr string) (any, bool) {
	for _, tok := range splitPtr(ptr) {
		switch c := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = c[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// exists reports a value at ptr that is not null, after the schema check
// pruned the invalid ones.
func (p *parser) exists(ptr string) bool {
	v, ok := lookup(p.val, ptr)
	return ok && v != nil
}
