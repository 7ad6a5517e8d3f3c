package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"unicode/utf16"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// bodySchema is an operation's request body schema (api/openapi.yaml),
// compiled once at start from the loaded document: the document stays the
// only schema, and a body is checked without kin-openapi's per-request
// settings, visited-schema lists and error values (issue 37). It checks
// what kin-openapi's VisitJSON (OpenAPI 3.0, as a request) checks, in its
// order, and words each problem as describe words kin-openapi's error, so
// that a client gets the same answer (TestBodySchemaAnswersAsKinOpenAPI).
// It takes only the keywords listed in compileBodySchema; an operation
// whose schema uses another is checked by kin-openapi.
type bodySchema struct {
	schema   *openapi3.Schema // for the words of a problem (types, x-pattern-message)
	anyType  bool             // no type: every JSON type
	types    []string
	nullable bool
	empty    bool // kin-openapi's IsEmpty: anything but null
	enum     []any
	enumJSON string

	min, max   *float64
	minLength  uint64
	maxLength  *uint64
	pattern    *regexp.Regexp
	patternSrc string

	minItems uint64
	maxItems *uint64
	items    *bodySchema

	props    map[string]*bodySchema
	names    []string // props' names, sorted
	required []string
	closed   bool // additionalProperties: false
	// requiredBits has the bit 1<<i of each required property names[i];
	// requiredElse is set when one required is not in properties.
	requiredBits uint64
	requiredElse bool
}

// errUnsupportedSchema: the schema uses a keyword bodySchema does not take.
var errUnsupportedSchema = errors.New("schema keyword not supported by the compiled body check")

// codepoints is kin-openapi's rewrite of \uXXXX in a pattern into Go's
// \x{XXXX} (openapi3.intoGoRegexp), so that a pattern means the same here.
var codepoints = regexp.MustCompile(`(?P<replaced_with_slash_x>\\u)(?P<code>[0-9A-F]{4})`)

// compileBodySchema compiles s, refusing (errUnsupportedSchema) any keyword
// it does not check exactly as kin-openapi does.
func compileBodySchema(s *openapi3.Schema) (*bodySchema, error) {
	return compileSchema(s, map[*openapi3.Schema]*bodySchema{})
}

func compileSchema(s *openapi3.Schema, done map[*openapi3.Schema]*bodySchema) (*bodySchema, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: unresolved reference", errUnsupportedSchema)
	}
	if b, ok := done[s]; ok {
		return b, nil
	}
	// Every field that is not one of ours must be unset: a keyword a later
	// kin-openapi adds is refused too.
	rest := *s
	rest.Extensions, rest.Origin = nil, nil
	rest.Type, rest.Title, rest.Description, rest.Enum = nil, "", "", nil
	rest.Default, rest.Example, rest.Examples, rest.ExternalDocs, rest.Comment = nil, nil, nil, nil, ""
	rest.Nullable, rest.Deprecated, rest.XML = false, false, nil
	rest.Min, rest.Max = nil, nil
	rest.MinLength, rest.MaxLength, rest.Pattern = 0, nil, ""
	rest.MinItems, rest.MaxItems, rest.Items = 0, nil, nil
	rest.Required, rest.Properties, rest.AdditionalProperties.Has = nil, nil, nil
	if !reflect.ValueOf(rest).IsZero() {
		return nil, fmt.Errorf("%w: %+v", errUnsupportedSchema, rest)
	}
	b := &bodySchema{schema: s, nullable: s.Nullable, empty: s.IsEmpty(), min: s.Min, max: s.Max,
		minLength: s.MinLength, maxLength: s.MaxLength, minItems: s.MinItems, maxItems: s.MaxItems,
		required: s.Required, closed: s.AdditionalProperties.Has != nil && !*s.AdditionalProperties.Has}
	done[s] = b
	if s.Type == nil {
		b.anyType = true
	} else {
		if len(*s.Type) != 1 {
			return nil, fmt.Errorf("%w: type %v", errUnsupportedSchema, *s.Type)
		}
		b.types = *s.Type
	}
	if len(s.Enum) > 0 {
		b.enum = s.Enum
		allowed, err := json.Marshal(s.Enum)
		if err != nil {
			return nil, fmt.Errorf("enum: %w", err)
		}
		b.enumJSON = string(allowed)
	}
	if s.Pattern != "" {
		re, err := regexp.Compile(codepoints.ReplaceAllString(s.Pattern, `\x{${code}}`))
		if err != nil {
			return nil, fmt.Errorf("%w: pattern %q: %v", errUnsupportedSchema, s.Pattern, err)
		}
		b.pattern, b.patternSrc = re, s.Pattern
	}
	if s.Items != nil {
		items, err := compileSchema(s.Items.Value, done)
		if err != nil {
			return nil, fmt.Errorf("items: %w", err)
		}
		b.items = items
	}
	if len(s.Properties) > 0 {
		b.props = make(map[string]*bodySchema, len(s.Properties))
		for name, ref := range s.Properties {
			p, err := compileSchema(ref.Value, done)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			b.props[name] = p
		}
		b.names = slices.Sorted(maps.Keys(b.props))
	}
	for _, k := range b.required {
		if i := slices.Index(b.names, k); i >= 0 && i < 64 {
			b.requiredBits |= 1 << i
		} else {
			b.requiredElse = true
		}
	}
	return b, nil
}

// permits is kin-openapi's Types.Permits.
func (b *bodySchema) permits(typ string) bool {
	return b.anyType || b.types[0] == typ
}

// schemaProblem is what describe takes from a kin-openapi SchemaError: where
// (its JSON pointer), which keyword, its reason, the schema and the value's
// JSON kind.
type schemaProblem struct {
	path    []string
	keyword string
	reason  string
	schema  *openapi3.Schema
	kind    string
}

// bodyProblems collects a body's problems; nil collects none (a check that
// only needs to know whether the body passes).
type bodyProblems struct {
	list []schemaProblem
}

func (ps *bodyProblems) add(path []string, b *bodySchema, keyword, reason string, v any) {
	if ps == nil {
		return
	}
	ps.list = append(ps.list, schemaProblem{path: slices.Clone(path), keyword: keyword, reason: reason, schema: b.schema, kind: toolrouter.JSONKind(v)})
}

// check reports whether v passes b, adding its problems to ps in
// kin-openapi's order (openapi3's visitJSON, MultiErrors, as a request).
func (b *bodySchema) check(v any, path []string, ps *bodyProblems) bool {
	if v == nil && b.nullable {
		return true
	}
	if b.empty {
		if v == nil {
			ps.add(path, b, "nullable", "Value is not nullable", nil)
			return false
		}
		return true
	}
	if b.enum != nil && !slices.ContainsFunc(b.enum, func(e any) bool { return equalJSON(e, v) }) {
		ps.add(path, b, "enum", "value is not one of the allowed values "+b.enumJSON, v)
		return false
	}
	switch v := v.(type) {
	case nil:
		ps.add(path, b, "nullable", "Value is not nullable", nil)
		return false
	case bool:
		if !b.permits(openapi3.TypeBoolean) {
			return b.wrongType(v, path, ps)
		}
		return true
	case float64:
		return b.checkNumber(v, path, ps)
	case string:
		return b.checkString(v, path, ps)
	case []any:
		return b.checkArray(v, path, ps)
	case map[string]any:
		return b.checkObject(v, path, ps)
	}
	ps.add(path, b, "type", fmt.Sprintf("unhandled value of type %T", v), v)
	return false
}

// wrongType is kin-openapi's expectedType (describe words it from the
// schema's type and the value's kind).
func (b *bodySchema) wrongType(v any, path []string, ps *bodyProblems) bool {
	ps.add(path, b, "type", "value must be of the schema's type", v)
	return false
}

func (b *bodySchema) checkNumber(v float64, path []string, ps *bodyProblems) bool {
	ok := true
	if b.permits(openapi3.TypeInteger) && !b.permits(openapi3.TypeNumber) {
		if math.Trunc(v) != v {
			ps.add(path, b, "type", "value must be an integer", v)
			ok = false
		}
	} else if !b.permits(openapi3.TypeNumber) {
		return b.wrongType(v, path, ps)
	}
	if b.min != nil && !(*b.min <= v) {
		ps.add(path, b, "minimum", fmt.Sprintf("number must be at least %g", *b.min), v)
		ok = false
	}
	if b.max != nil && !(*b.max >= v) {
		ps.add(path, b, "maximum", fmt.Sprintf("number must be at most %g", *b.max), v)
		ok = false
	}
	return ok
}

func (b *bodySchema) checkString(v string, path []string, ps *bodyProblems) bool {
	if !b.permits(openapi3.TypeString) {
		return b.wrongType(v, path, ps)
	}
	ok := true
	if b.minLength != 0 || b.maxLength != nil {
		// JSON Schema's lengths count UTF-16 code units, as kin-openapi does.
		n := uint64(0)
		for _, r := range v {
			if utf16.IsSurrogate(r) {
				n += 2
			} else {
				n++
			}
		}
		if b.minLength != 0 && n < b.minLength {
			ps.add(path, b, "minLength", fmt.Sprintf("minimum string length is %d", b.minLength), v)
			ok = false
		}
		if b.maxLength != nil && n > *b.maxLength {
			ps.add(path, b, "maxLength", fmt.Sprintf("maximum string length is %d", *b.maxLength), v)
			ok = false
		}
	}
	if b.pattern != nil && !b.pattern.MatchString(v) {
		ps.add(path, b, "pattern", fmt.Sprintf(`string doesn't match the regular expression "%s"`, b.patternSrc), v)
		ok = false
	}
	return ok
}

func (b *bodySchema) checkArray(v []any, path []string, ps *bodyProblems) bool {
	if !b.permits(openapi3.TypeArray) {
		return b.wrongType(v, path, ps)
	}
	ok := true
	if b.minItems != 0 && uint64(len(v)) < b.minItems {
		ps.add(path, b, "minItems", fmt.Sprintf("minimum number of items is %d", b.minItems), v)
		ok = false
	}
	if b.maxItems != nil && uint64(len(v)) > *b.maxItems {
		ps.add(path, b, "maxItems", fmt.Sprintf("maximum number of items is %d", *b.maxItems), v)
		ok = false
	}
	if b.items != nil {
		for i, item := range v {
			var at []string
			if ps != nil {
				at = append(slices.Clip(path), strconv.Itoa(i))
			}
			if !b.items.check(item, at, ps) {
				ok = false
				if ps == nil {
					return false
				}
			}
		}
	}
	return ok
}

func (b *bodySchema) checkObject(v map[string]any, path []string, ps *bodyProblems) bool {
	if !b.permits(openapi3.TypeObject) {
		return b.wrongType(v, path, ps)
	}
	if ps == nil { // the same verdict, without sorting the keys
		if b.props == nil && !b.closed && len(b.required) == 0 {
			return true // any object
		}
		for k, val := range v {
			if p := b.props[k]; p != nil {
				if !p.check(val, nil, nil) {
					return false
				}
			} else if b.closed {
				return false
			}
		}
		for _, k := range b.required {
			if _, ok := v[k]; !ok {
				return false
			}
		}
		return true
	}
	ok := true
	for _, k := range slices.Sorted(maps.Keys(v)) {
		if p := b.props[k]; p != nil {
			if !p.check(v[k], append(slices.Clip(path), k), ps) {
				ok = false
			}
			continue
		}
		if b.closed {
			ps.add(path, b, "properties", fmt.Sprintf("property %q is unsupported", k), v)
			ok = false
		}
	}
	for _, k := range b.required {
		if _, has := v[k]; !has {
			ps.add(append(slices.Clip(path), k), b, "required", fmt.Sprintf("property %q is missing", k), v)
			ok = false
		}
	}
	return ok
}

// equalJSON is kin-openapi's equalJSONValues for an enum's value a (as the
// loader made it) and a decoded JSON value b.
func equalJSON(a, b any) bool {
	if x, ok := number(a); ok {
		y, ok := b.(float64)
		return ok && x == y
	}
	switch a := a.(type) {
	case []any:
		b, ok := b.([]any)
		return ok && slices.EqualFunc(a, b, equalJSON)
	case map[string]any:
		b, ok := b.(map[string]any)
		return ok && maps.EqualFunc(a, b, equalJSON)
	}
	return reflect.DeepEqual(a, b)
}

func number(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	case uint64:
		return float64(v), true
	}
	return 0, false
}
