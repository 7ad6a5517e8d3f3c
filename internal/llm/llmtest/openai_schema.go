package llmtest

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// openAISchemaJSON is shared/specs/openai-subset.schema.json: OpenAI's own
// components.schemas (openai/openai-openapi, MIT) for Chat Completions.
//
//go:embed testdata/openai-subset.schema.json
var openAISchemaJSON []byte

const openAISchemaURL = "https://toolrouterd.test/llmtest/openai-subset.schema.json"

var openAISchemas = struct {
	once     sync.Once
	err      error
	doc      map[string]any
	compiler *jsonschema.Compiler
	mu       sync.Mutex
	compiled map[string]*jsonschema.Schema
}{compiled: map[string]*jsonschema.Schema{}}

func loadOpenAISchemas() error {
	openAISchemas.once.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(openAISchemaJSON))
		if err != nil {
			openAISchemas.err = err
			return
		}
		// The file is OpenAPI-flavoured: "nullable: true" means null is
		// allowed too, which JSON Schema 2020-12 ignores; the real API
		// accepts null there (e.g. "max_completion_tokens": null).
		doc = openAPINullable(doc)
		m, ok := doc.(map[string]any)
		if ok {
			draft2019Recursion(m)
		}
		if !ok {
			openAISchemas.err = errors.New("openai schema: not an object")
			return
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		if err := c.AddResource(openAISchemaURL, m); err != nil {
			openAISchemas.err = err
			return
		}
		openAISchemas.doc = m
		openAISchemas.compiler = c
	})
	return openAISchemas.err
}

func openAISchema(def string) (*jsonschema.Schema, error) {
	if err := loadOpenAISchemas(); err != nil {
		return nil, err
	}
	openAISchemas.mu.Lock()
	defer openAISchemas.mu.Unlock()
	if s, ok := openAISchemas.compiled[def]; ok {
		return s, nil
	}
	s, err := openAISchemas.compiler.Compile(openAISchemaURL + "#/components/schemas/" + def)
	if err != nil {
		return nil, err
	}
	openAISchemas.compiled[def] = s
	return s, nil
}

// ValidateOpenAI validates a JSON document against one of OpenAI's schemas
// (components.schemas.DEF of shared/specs/openai-subset.schema.json, with
// OpenAPI "nullable" honoured), e.g. "CreateChatCompletionResponse" or
// "CreateChatCompletionRequest". The error lists the first failure in
// OpenAI's own wording.
func ValidateOpenAI(def string, doc []byte) error {
	sch, err := openAISchema(def)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return err
	}
	if err := sch.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			e := openAIValidationError(ve, inst)
			return fmt.Errorf("%s (%v)", e.Message, ve)
		}
		return err
	}
	return nil
}

// draft2019Recursion rewrites the one draft 2019-09 recursion of the spec
// (CompoundFilter: "$recursiveAnchor": true and "$recursiveRef": "#",
// which 2020-12 does not know) into a plain $ref to the schema itself.
func draft2019Recursion(doc map[string]any) {
	schemas, _ := doc["components"].(map[string]any)["schemas"].(map[string]any)
	for name, s := range schemas {
		var walk func(v any)
		walk = func(v any) {
			switch n := v.(type) {
			case []any:
				for _, c := range n {
					walk(c)
				}
			case map[string]any:
				delete(n, "$recursiveAnchor")
				if _, ok := n["$recursiveRef"]; ok {
					delete(n, "$recursiveRef")
					n["$ref"] = "#/components/schemas/" + name
				}
				for _, c := range n {
					walk(c)
				}
			}
		}
		walk(s)
	}
}

// openAPINullable rewrites "nullable: true" into JSON Schema.
func openAPINullable(v any) any {
	switch n := v.(type) {
	case []any:
		for i := range n {
			n[i] = openAPINullable(n[i])
		}
		return n
	case map[string]any:
		for k, c := range n {
			n[k] = openAPINullable(c)
		}
		nullable, _ := n["nullable"].(bool)
		delete(n, "nullable")
		if !nullable {
			return n
		}
		if t, ok := n["type"].(string); ok {
			n["type"] = []any{t, "null"}
			if e, ok := n["enum"].([]any); ok {
				n["enum"] = append(e, nil)
			}
			return n
		}
		return map[string]any{"anyOf": []any{n, map[string]any{"type": "null"}}}
	}
	return v
}

// openAIRequestParams is every top-level property a request schema
// (CreateChatCompletionRequest, CreateResponse) declares (through allOf and
// $ref).
func openAIRequestParams(def string) (map[string]bool, error) {
	if err := loadOpenAISchemas(); err != nil {
		return nil, err
	}
	schemas := openAISchemas.doc["components"].(map[string]any)["schemas"].(map[string]any)
	out := map[string]bool{}
	seen := map[string]bool{}
	var walk func(n any)
	walk = func(n any) {
		m, ok := n.(map[string]any)
		if !ok {
			return
		}
		if ref, ok := m["$ref"].(string); ok {
			name := ref[strings.LastIndex(ref, "/")+1:]
			if !seen[name] {
				seen[name] = true
				walk(schemas[name])
			}
		}
		if props, ok := m["properties"].(map[string]any); ok {
			for k := range props {
				out[k] = true
			}
		}
		for _, key := range []string{"allOf", "anyOf"} {
			if list, ok := m[key].([]any); ok {
				for _, c := range list {
					walk(c)
				}
			}
		}
	}
	walk(schemas[def])
	return out, nil
}

// openAIErr is the body of an OpenAI error: {"error": {...}}.
type openAIErr struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func strp(s string) *string { return &s }

// openAIValidationError turns a schema failure into the error OpenAI's API
// gives for it ("Missing required parameter: 'messages[0].content'.",
// "Invalid type for '…': expected a string, but got an object instead.", …).
func openAIValidationError(ve *jsonschema.ValidationError, inst any) openAIErr {
	leaf := bestLeaf(ve)
	k := leaf.kind
	path := openAIPath(leaf.loc)
	e := openAIErr{Type: "invalid_request_error", Param: strp(path)}
	switch k := k.(type) {
	case *kind.Required:
		missing := k.Missing[0]
		p := missing
		if path != "" {
			p = path + "." + missing
		}
		e.Param = strp(p)
		e.Message = fmt.Sprintf("Missing required parameter: '%s'.", p)
		e.Code = strp("missing_required_parameter")
	case *typesKind:
		e.Message = fmt.Sprintf("Invalid type for '%s': expected %s, but got %s instead.", path, wantTypes(k.want), anJSONType(instanceType(inst, leaf.loc, k.got)))
		e.Code = strp("invalid_type")
	case *kind.Type:
		e.Message = fmt.Sprintf("Invalid type for '%s': expected %s, but got %s instead.", path, wantTypes(k.Want), anJSONType(instanceType(inst, leaf.loc, k.Got)))
		e.Code = strp("invalid_type")
	case *kind.Enum:
		e.Message = fmt.Sprintf("Invalid value: %s. Supported values are: %s.", quoteVal(k.Got), listVals(k.Want))
		e.Code = strp("invalid_value")
	case *kind.Const:
		e.Message = fmt.Sprintf("Invalid value: %s. Supported values are: %s.", quoteVal(k.Got), listVals([]any{k.Want}))
		e.Code = strp("invalid_value")
	case *kind.Pattern:
		e.Message = fmt.Sprintf("Invalid '%s': string does not match pattern. Expected a string that matches the pattern '%s'.", path, k.Want)
		e.Code = strp("invalid_value")
	case *kind.MinItems:
		if k.Got == 0 {
			e.Message = fmt.Sprintf("Invalid '%s': empty array. Expected an array with minimum length %d, but got an empty array instead.", path, k.Want)
			e.Code = strp("empty_array")
		} else {
			e.Message = fmt.Sprintf("Invalid '%s': array too short. Expected an array with minimum length %d, but got an array with length %d instead.", path, k.Want, k.Got)
			e.Code = strp("array_below_min_length")
		}
	case *kind.MaxItems:
		e.Message = fmt.Sprintf("Invalid '%s': array too long. Expected an array with maximum length %d, but got an array with length %d instead.", path, k.Want, k.Got)
		e.Code = strp("array_above_max_length")
	case *kind.MinLength:
		e.Message = fmt.Sprintf("Invalid '%s': string too short. Expected a string with minimum length %d, but got a string with length %d instead.", path, k.Want, k.Got)
		e.Code = strp("string_below_min_length")
	case *kind.MaxLength:
		e.Message = fmt.Sprintf("Invalid '%s': string too long. Expected a string with maximum length %d, but got a string with length %d instead.", path, k.Want, k.Got)
		e.Code = strp("string_above_max_length")
	case *kind.Maximum:
		w := numWord(leaf.schema)
		e.Message = fmt.Sprintf("Invalid '%s': %s above maximum value. Expected a value <= %s, but got %s instead.", path, w, ratString(k.Want), ratString(k.Got))
		e.Code = strp(w + "_above_max_value")
	case *kind.Minimum:
		w := numWord(leaf.schema)
		e.Message = fmt.Sprintf("Invalid '%s': %s below minimum value. Expected a value >= %s, but got %s instead.", path, w, ratString(k.Want), ratString(k.Got))
		e.Code = strp(w + "_below_min_value")
	case *kind.AdditionalProperties:
		p := k.Properties[0]
		if path != "" {
			p = path + "." + p
		}
		e.Param = strp(p)
		e.Message = fmt.Sprintf("Unknown parameter: '%s'.", p)
		e.Code = strp("unknown_parameter")
	case jsonschema.ErrorKind:
		e.Message = fmt.Sprintf("Invalid value for '%s': does not satisfy '%s'.", path, strings.Join(k.KeywordPath(), "/"))
		e.Code = strp("invalid_value")
	}
	return e
}

// instanceType refines a "number" to "integer" when the value at loc is one.
func instanceType(inst any, loc []string, got string) string {
	if got != "number" {
		return got
	}
	v := inst
	for _, tok := range loc {
		switch n := v.(type) {
		case map[string]any:
			v = n[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n) {
				return got
			}
			v = n[i]
		default:
			return got
		}
	}
	if n, ok := v.(json.Number); ok && !strings.ContainsAny(n.String(), ".eE") {
		return "integer"
	}
	return got
}

// typesKind merges the type failures of the branches of a oneOf/anyOf at one
// place ("expected one of a string or array of objects").
type typesKind struct {
	got  string
	want []string
}

// leafErr is the one failure reported: a jsonschema ErrorKind or *typesKind.
type leafErr struct {
	loc    []string
	kind   any
	schema string // the failing schema's URL, when known
}

// bestLeaf picks the failure OpenAI would report: inside a oneOf/anyOf, the
// branch whose discriminator ("role" or "type") matched.
func bestLeaf(ve *jsonschema.ValidationError) leafErr {
	for {
		if len(ve.Causes) == 0 {
			return leafErr{ve.InstanceLocation, ve.ErrorKind, ve.SchemaURL}
		}
		switch ve.ErrorKind.(type) {
		case *kind.OneOf, *kind.AnyOf:
			if merged := mergedTypes(ve); merged != nil {
				return *merged
			}
			var kept []*jsonschema.ValidationError
			var discs []*jsonschema.ValidationError
			for _, c := range ve.Causes {
				if d := discriminatorError(c, ve.InstanceLocation); d != nil {
					discs = append(discs, d)
					continue
				}
				kept = append(kept, c)
			}
			if len(kept) == 0 && len(discs) > 0 {
				return mergeEnums(discs)
			}
			if len(kept) > 0 {
				ve = kept[0]
				continue
			}
		}
		ve = ve.Causes[0]
	}
}

// discriminatorError finds, in one branch, a const/enum failure on the
// branch's "role" or "type" property: the branch is for another kind.
func discriminatorError(branch *jsonschema.ValidationError, at []string) *jsonschema.ValidationError {
	var found *jsonschema.ValidationError
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if found != nil {
			return
		}
		if len(e.InstanceLocation) == len(at)+1 && equalPrefix(e.InstanceLocation, at) {
			last := e.InstanceLocation[len(at)]
			if last == "role" || last == "type" {
				switch e.ErrorKind.(type) {
				case *kind.Enum, *kind.Const:
					found = e
					return
				}
			}
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(branch)
	return found
}

func equalPrefix(a, prefix []string) bool {
	if len(a) < len(prefix) {
		return false
	}
	for i := range prefix {
		if a[i] != prefix[i] {
			return false
		}
	}
	return true
}

// mergeEnums reports an unknown discriminator with every supported value.
func mergeEnums(discs []*jsonschema.ValidationError) leafErr {
	var got any
	var want []any
	for _, d := range discs {
		switch k := d.ErrorKind.(type) {
		case *kind.Enum:
			got = k.Got
			want = append(want, k.Want...)
		case *kind.Const:
			got = k.Got
			want = append(want, k.Want)
		}
	}
	return leafErr{loc: discs[0].InstanceLocation, kind: &kind.Enum{Got: got, Want: want}}
}

// mergedTypes: when every branch fails only on its type at the branch's own
// place, one "expected one of …" error.
func mergedTypes(ve *jsonschema.ValidationError) *leafErr {
	var got string
	var want []string
	for _, c := range ve.Causes {
		leaf := c
		for len(leaf.Causes) == 1 {
			leaf = leaf.Causes[0]
		}
		t, ok := leaf.ErrorKind.(*kind.Type)
		if !ok || len(leaf.Causes) != 0 || len(leaf.InstanceLocation) != len(ve.InstanceLocation) {
			return nil
		}
		got = t.Got
		want = append(want, t.Want...)
	}
	if len(want) == 0 {
		return nil
	}
	return &leafErr{loc: ve.InstanceLocation, kind: &typesKind{got: got, want: want}}
}

// openAIPath writes an instance location as OpenAI does: messages[0].content.
func openAIPath(loc []string) string {
	var b strings.Builder
	for _, tok := range loc {
		if _, err := strconv.Atoi(tok); err == nil {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}

func anJSONType(t string) string {
	switch t {
	case "null":
		return "null"
	case "object":
		return "an object"
	case "array":
		return "an array"
	case "integer":
		return "an integer"
	case "number":
		return "a decimal"
	case "boolean":
		return "a boolean"
	case "string":
		return "a string"
	}
	return "a " + t
}

func wantTypes(want []string) string {
	seen := map[string]bool{}
	var ws []string
	for _, w := range want {
		if !seen[w] {
			seen[w] = true
			ws = append(ws, anJSONType(w))
		}
	}
	if len(ws) == 1 {
		return ws[0]
	}
	return "one of " + strings.Join(ws[:len(ws)-1], ", ") + " or " + ws[len(ws)-1]
}

func quoteVal(v any) string {
	switch x := v.(type) {
	case string:
		return "'" + x + "'"
	case nil:
		return "null"
	}
	return fmt.Sprint(v)
}

func listVals(vals []any) string {
	seen := map[string]bool{}
	var qs []string
	for _, v := range vals {
		q := quoteVal(v)
		if !seen[q] {
			seen[q] = true
			qs = append(qs, q)
		}
	}
	sort.Strings(qs)
	switch len(qs) {
	case 0:
		return ""
	case 1:
		return qs[0]
	case 2:
		return qs[0] + " and " + qs[1]
	}
	return strings.Join(qs[:len(qs)-1], ", ") + ", and " + qs[len(qs)-1]
}

// numWord is "integer" when the failing schema is of type integer, else
// "decimal" (OpenAI's words for the two).
func numWord(schemaURL string) string {
	_, ptr, ok := strings.Cut(schemaURL, "#")
	if !ok || openAISchemas.doc == nil {
		return "decimal"
	}
	var node any = openAISchemas.doc
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch n := node.(type) {
		case map[string]any:
			node = n[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n) {
				return "decimal"
			}
			node = n[i]
		default:
			return "decimal"
		}
	}
	if m, ok := node.(map[string]any); ok {
		switch t := m["type"].(type) {
		case string:
			if t == "integer" {
				return "integer"
			}
		case []any:
			for _, x := range t {
				if x == "integer" {
					return "integer"
				}
			}
		}
	}
	return "decimal"
}

func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}
