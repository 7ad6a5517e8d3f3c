package registry

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"github.com/toolrouterd/toolrouterd/internal/suggest"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// schemaJSON is the JSON Schema (2020-12) of the registry file: every key,
// its type, its allowed values and a description editors show. It is the
// one list of the file's keys; what a schema cannot say (references across
// sections, ${VAR} expansion, URLs, durations' ranges, a default that
// fails its tool's schema…) is checked in Go after it.
//
//go:embed registry.schema.json
var schemaJSON []byte

// Schema returns the registry file's JSON Schema, as `toolrouterd schema
// registry` prints it.
func Schema() []byte { return bytes.Clone(schemaJSON) }

const schemaURL = "https://github.com/toolrouterd/toolrouterd/registry.schema.json"

// registrySchema is the compiled schema and what the parser reads from it.
type registrySchema struct {
	compiled *jsonschema.Schema
	doc      any
	// declared are the names of the schema's properties: a declared key
	// with a null value counts as absent.
	declared map[string]bool
	// free are the properties whose value is free-form (an object schema
	// with no properties of its own): their contents are data.
	free map[string]bool
}

// loadSchema compiles the embedded schema once; it is immutable.
var loadSchema = sync.OnceValues(func() (*registrySchema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, fmt.Errorf("registry schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("registry schema: %w", err)
	}
	compiled, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("registry schema: %w", err)
	}
	rs := &registrySchema{compiled: compiled, doc: doc, declared: map[string]bool{}, free: map[string]bool{}}
	rs.collect(doc)
	return rs, nil
})

func (rs *registrySchema) collect(v any) {
	switch v := v.(type) {
	case map[string]any:
		if props, ok := v["properties"].(map[string]any); ok {
			for name, sub := range props {
				rs.declared[name] = true
				if m, ok := sub.(map[string]any); ok && m["type"] == "object" && m["properties"] == nil && m["additionalProperties"] == nil {
					rs.free[name] = true
				}
			}
		}
		for _, sub := range v {
			rs.collect(sub)
		}
	case []any:
		for _, sub := range v {
			rs.collect(sub)
		}
	}
}

// node is the schema object at a schema location (URL#pointer).
func (rs *registrySchema) node(loc string) map[string]any {
	_, frag, _ := strings.Cut(loc, "#")
	v, _ := lookup(rs.doc, frag)
	m, _ := v.(map[string]any)
	return m
}

var printer = message.NewPrinter(language.English)

// checkSchema validates p.val against the schema: every failure is a
// problem at its value's line, and the value is pruned so that the checks
// in Go see only valid values. A number or bool where a string is wanted
// counts by its text, as it always has (name: 2024 is the name "2024").
func (p *parser) checkSchema() {
	var leaves []*jsonschema.ValidationError
	for range 4 {
		leaves = nil
		var ve *jsonschema.ValidationError
		if err := p.schema.compiled.Validate(p.val); errors.As(err, &ve) {
			leaves = collectLeaves(ve, leaves)
		} else if err != nil {
			p.atLine(0, "", "validate against the registry schema: "+err.Error())
			return
		}
		if !p.coerce(leaves) {
			break
		}
	}
	p.nameItems()
	// In file order of pointers; of two failures of one value, the
	// first by schema location is reported (the validator's order is a
	// map's).
	slices.SortStableFunc(leaves, func(a, b *jsonschema.ValidationError) int {
		if c := strings.Compare(ptrOf(a.InstanceLocation), ptrOf(b.InstanceLocation)); c != 0 {
			return c
		}
		return strings.Compare(a.SchemaURL, b.SchemaURL)
	})
	var prune []string
	done := map[string]bool{} // one problem a value
	// A misspelt key of a required one is one problem, its own: the
	// required key it stands for is not reported missing besides.
	meant := map[string]bool{}
	for _, e := range leaves {
		if k, ok := e.ErrorKind.(*kind.AdditionalProperties); ok {
			ptr, node := ptrOf(e.InstanceLocation), p.schema.node(e.SchemaURL)
			for _, name := range k.Properties {
				if best := closestKey(name, node); best != "" {
					meant[ptr+"/"+escapePtr(best)] = true
				}
			}
		}
	}
	for _, e := range leaves {
		ptr := ptrOf(e.InstanceLocation)
		node := p.schema.node(e.SchemaURL)
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			// A condition (if/then) words what it requires.
			why, ok := node["errorMessage"].(string)
			if !ok || node["type"] != nil {
				why = "required"
			}
			for _, m := range k.Missing {
				if kp := ptr + "/" + escapePtr(m); !meant[kp] {
					p.atKey(kp, why)
				}
			}
			continue
		case *kind.PropertyNames:
			// Its instance location is unreliable (the validator's own
			// slice); headers and env check their names again in Go.
			continue
		case *kind.AdditionalProperties:
			under := p.underEmpty(ptr, k.Properties, node)
			for _, name := range slices.Sorted(slices.Values(k.Properties)) {
				kp := ptr + "/" + escapePtr(name)
				prune = append(prune, kp)
				switch u, ok := under[name]; {
				case !ok:
					p.atKey(kp, "unknown key"+suggestKey(name, node))
				case u.first:
					p.atKey(kp, fmt.Sprintf("unknown key here (meant under %s, line %d, which is empty? indent it%s further)", u.key, u.line, u.others))
				}
			}
			continue
		}
		if !done[ptr] {
			done[ptr] = true
			p.at(ptr, p.message(e, node, ptr))
			prune = append(prune, ptr)
		}
	}
	for _, ptr := range prune {
		p.val = replaced(p.val, ptr, nil)
	}
}

func collectLeaves(e *jsonschema.ValidationError, out []*jsonschema.ValidationError) []*jsonschema.ValidationError {
	if _, names := e.ErrorKind.(*kind.PropertyNames); names || len(e.Causes) == 0 {
		return append(out, e)
	}
	for _, c := range e.Causes {
		out = collectLeaves(c, out)
	}
	return out
}

func ptrOf(loc []string) string {
	var b strings.Builder
	for _, t := range loc {
		b.WriteString("/" + escapePtr(t))
	}
	return b.String()
}

// coerce turns the numbers and bools the schema wants as strings into
// their text; it reports whether it changed any.
func (p *parser) coerce(leaves []*jsonschema.ValidationError) bool {
	changed := false
	for _, e := range leaves {
		k, ok := e.ErrorKind.(*kind.Type)
		ptr := ptrOf(e.InstanceLocation)
		text, scalar := p.texts[ptr]
		if !ok || !scalar || !slices.Contains(k.Want, "string") {
			continue
		}
		p.val = replaced(p.val, ptr, text)
		delete(p.texts, ptr)
		changed = true
	}
	return changed
}

// message words a failure of the value at ptr: the schema node's
// errorMessage (which the YAML language server shows too), else a
// sentence made from the keyword.
func (p *parser) message(e *jsonschema.ValidationError, node map[string]any, ptr string) string {
	_, isType := e.ErrorKind.(*kind.Type)
	// errorMessage words a value of the right type that is wrong; a
	// mapping's also words a value that is no mapping.
	if msg, ok := node["errorMessage"].(string); ok && (!isType || node["type"] == "object") {
		if s, isStr := p.valueAt(ptr); isStr && node["x-show-value"] == true {
			msg += fmt.Sprintf(", got %q", s)
		}
		return msg
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Type:
		return "must be " + typeWords(k.Want)
	case *kind.Enum:
		var vals []string
		for _, v := range k.Want {
			vals = append(vals, fmt.Sprint(v))
		}
		msg := "must be " + orList(vals)
		if s, ok := k.Got.(string); ok {
			msg += fmt.Sprintf(", got %q", s)
			if c, near := suggest.Closest(s, vals); near {
				msg += fmt.Sprintf("; did you mean %q?", c)
			}
		}
		return msg
	case *kind.Minimum:
		return fmt.Sprintf("must be at least %v", node["minimum"])
	case *kind.Maximum:
		return fmt.Sprintf("must be at most %v", node["maximum"])
	case *kind.MinItems:
		return fmt.Sprintf("must have at least %d item(s)", k.Want)
	}
	return e.ErrorKind.LocalizedString(printer)
}

// valueAt is the string at ptr, if it is one.
func (p *parser) valueAt(ptr string) (string, bool) {
	v, _ := lookup(p.val, ptr)
	s, ok := v.(string)
	return s, ok
}

func typeWords(want []string) string {
	words := map[string]string{"object": "a mapping", "array": "a list", "string": "a string", "boolean": "true or false",
		"integer": "an integer", "number": "a number", "null": "null"}
	var out []string
	for _, w := range want {
		out = append(out, words[w])
	}
	return orList(out)
}

// orList joins "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// emptyParent is where an unknown key probably belongs: under key, the
// mapping-valued key on line that is empty in the file; first marks the
// first of the unknown keys after it, others the words for the rest.
type emptyParent struct {
	key, others string
	line        int
	first       bool
}

// underEmpty finds the unknown keys (of the mapping at ptr, node's
// instance) that follow, with no known key between, a key of the mapping
// that is empty in the file but should hold a mapping: the shape of lines
// meant under it indented as far as it ("input_schema:" then "type:
// object" below it, not further in). Such a run is one problem, at its
// first key. A key close to one of the mapping's is a misspelling of it,
// not one of these.
func (p *parser) underEmpty(ptr string, unknown []string, node map[string]any) map[string]emptyParent {
	props, _ := node["properties"].(map[string]any)
	type key struct {
		name string
		line int
	}
	var empty, known []key
	for name, sub := range props {
		kp := ptr + "/" + escapePtr(name)
		if m, _ := sub.(map[string]any); m["type"] == "object" && p.keyLines[kp] > 0 && p.get(kp) == nil {
			empty = append(empty, key{name, p.keyLines[kp]})
		}
	}
	if len(empty) == 0 {
		return nil
	}
	for _, name := range p.order[ptr] {
		if !slices.Contains(unknown, name) {
			known = append(known, key{name, p.keyLines[ptr+"/"+escapePtr(name)]})
		}
	}
	runs := map[string][]key{} // empty key → the unknown keys after it
	for _, name := range unknown {
		line := p.keyLines[ptr+"/"+escapePtr(name)]
		if closestKey(name, node) != "" {
			continue
		}
		var parent key
		for _, e := range empty {
			if e.line < line && e.line > parent.line {
				parent = e
			}
		}
		if parent.name == "" || slices.ContainsFunc(known, func(k key) bool { return k.line > parent.line && k.line < line }) {
			continue
		}
		runs[parent.name] = append(runs[parent.name], key{name, line})
	}
	out := map[string]emptyParent{}
	for parent, run := range runs {
		slices.SortFunc(run, func(a, b key) int { return a.line - b.line })
		var rest []string
		for _, k := range run[1:] {
			rest = append(rest, k.name)
		}
		others := ""
		if len(rest) > 0 {
			others = " and " + strings.Join(rest, ", ")
		}
		for i, k := range run {
			out[k.name] = emptyParent{key: parent, line: p.keyLines[ptr+"/"+escapePtr(parent)], first: i == 0, others: others}
		}
	}
	return out
}

// suggestKey names the known key closest to a misspelt one.
func suggestKey(name string, node map[string]any) string {
	if best := closestKey(name, node); best != "" {
		return fmt.Sprintf(" (did you mean %s?)", best)
	}
	return ""
}

// closestKey is the key of node's properties closest to name, "" when
// none is close.
func closestKey(name string, node map[string]any) string {
	props, _ := node["properties"].(map[string]any)
	best, bestD := "", 3
	for _, k := range slices.Sorted(maps.Keys(props)) {
		if d := editDistance(name, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := []int{i}
		for j := 1; j <= len(b); j++ {
			cur = append(cur, min(prev[j]+1, cur[j-1]+1, prev[j-1]+boolInt(a[i-1] != b[j-1])))
		}
		prev = cur
	}
	return prev[len(b)]
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// replaced sets the value at ptr (which exists) in v; pruning sets it to
// null, so that the items of a list keep their index and every getter
// sees the value as absent.
func replaced(v any, ptr string, to any) any {
	if ptr == "" {
		return to
	}
	i := strings.LastIndexByte(ptr, '/')
	parent, _ := lookup(v, ptr[:i])
	switch c := parent.(type) {
	case map[string]any:
		c[unescapePtr(ptr[i+1:])] = to
	case []any:
		if n, err := strconv.Atoi(ptr[i+1:]); err == nil && n >= 0 && n < len(c) {
			c[n] = to
		}
	}
	return v
}

// labels name the items of a section in problems: `tool "x": timeout`,
// `client "a": tools[0]`; items without a name, and the items of the
// other sections, by index (providers[0].kind).
var labels = map[string]string{"clients": "client %q: ", "guardrails": "guardrail %q: ", "virtual_servers": "virtual server %q: "}

// nameItems records the names of the items of the sections, before
// pruning drops an invalid one: `tool "bad name!": name: must be …`.
func (p *parser) nameItems() {
	root, _ := p.val.(map[string]any)
	for _, sec := range []string{"tools", "clients", "guardrails", "virtual_servers"} {
		items, _ := root[sec].([]any)
		for i, it := range items {
			m, _ := it.(map[string]any)
			if name, ok := m["name"].(string); ok && name != "" {
				p.names["/"+sec+"/"+strconv.Itoa(i)] = name
			}
		}
	}
}

// place renders a pointer as the tool and field a problem names.
func (p *parser) place(ptr string) (tool, field string) {
	toks := splitPtr(ptr)
	var b strings.Builder
	cur := ""
	if len(toks) >= 2 && p.arrays["/"+escapePtr(toks[0])] {
		cur = "/" + escapePtr(toks[0]) + "/" + toks[1]
		switch name := p.names[cur]; {
		case name != "" && toks[0] == "tools":
			tool = name
		case name != "" && labels[toks[0]] != "":
			fmt.Fprintf(&b, labels[toks[0]], name)
		default:
			fmt.Fprintf(&b, "%s[%s]", toks[0], toks[1])
		}
		toks = toks[2:]
	}
	slash := false
	for _, tok := range toks {
		switch s := b.String(); {
		case slash:
			b.WriteString("/" + tok)
		case p.arrays[cur]:
			b.WriteString("[" + tok + "]")
		case s == "" || strings.HasSuffix(s, ": "):
			b.WriteString(tok)
		default:
			b.WriteString("." + tok)
		}
		slash = slash || !p.arrays[cur] && p.schema.free[tok]
		cur += "/" + escapePtr(tok)
	}
	return tool, b.String()
}

// problems renders the pending problems in file order.
func (p *parser) problems() Problems {
	var out Problems
	seen := map[Problem]bool{}
	for _, pp := range p.pending {
		tool, field := p.place(pp.ptr)
		pr := Problem{File: p.file, Line: pp.line, Tool: tool, Field: field + pp.suffix, Why: pp.why, UnsetKeyEnv: pp.unsetEnv}
		if seen[pr] { // an aliased node is read once per use
			continue
		}
		seen[pr] = true
		out = append(out, pr)
	}
	out.sortByLine()
	return out
}
