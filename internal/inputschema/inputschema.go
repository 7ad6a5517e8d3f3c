// Package inputschema compiles a tool's input_schema (JSON Schema 2020-12
// unless $schema says otherwise, self-contained: no external references)
// into the Tool.ValidateArgs that checks a call's arguments, with messages
// that name the offending field. The registry compiles its file tools'
// schemas with it, mcpclient those of the tools MCP servers list, so that
// arguments are checked alike (docs/registry.md "The registry file").
package inputschema

import (
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/toolrouterd/toolrouterd/internal/suggest"
)

// printer renders the validator's messages; a Printer is safe for
// concurrent use.
var printer = message.NewPrinter(language.English)

// schemaURL is where a tool's input schema lives while it compiles; it is
// never fetched.
const schemaURL = "mem:///input_schema.json"

// maxArgErrors caps the failures one ValidateArgs error lists.
const maxArgErrors = 5

// noLoader refuses every schema the compiler wants to fetch: a registry
// schema must be self-contained (no files, no network).
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, errors.New("external references are not allowed")
}

// Problem is one reason a schema does not compile, at a JSON pointer
// (Ptr, "" for the root) inside the schema.
type Problem struct {
	Ptr string
	Why string
}

// Compile compiles schema (nil: {"type": "object"}) and returns the
// Tool.ValidateArgs for it, or the reasons it does not compile. A compiled
// schema is immutable, so validate is safe for concurrent use.
func Compile(schema map[string]any) (validate func(map[string]any) error, problems []Problem) {
	if schema == nil {
		schema = map[string]any{"type": "object"}
	}
	compiled, err := compileSchema(schema)
	if err != nil {
		return nil, compileProblems(err, schema)
	}
	return argsValidator(compiled), nil
}

// Validator is Compile with the problems as one error, "invalid JSON
// Schema: …", for tools that join the registry from elsewhere (MCP
// servers).
func Validator(schema map[string]any) (func(map[string]any) error, error) {
	validate, problems := Compile(schema)
	if problems != nil {
		msgs := make([]string, len(problems))
		for i, p := range problems {
			msgs[i] = p.Why
			if p.Ptr != "" {
				msgs[i] = p.Ptr + ": " + p.Why
			}
		}
		return nil, errors.New("invalid JSON Schema: " + strings.Join(msgs, "; "))
	}
	return validate, nil
}

// compileSchema compiles a tool's input schema as JSON Schema 2020-12 (the
// default when it has no $schema).
func compileSchema(doc map[string]any) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	return c.Compile(schemaURL)
}

// compileProblems explains a compile error, one entry per failure.
// A place in the schema gets one problem: the metaschema's alternatives
// ("type" is one of the type names or a list of them) each fail there,
// and only the first is reported; a "type" that is no type name says so,
// with the name it is closest to.
func compileProblems(err error, schema map[string]any) []Problem {
	var sve *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if errors.As(err, &sve) && errors.As(sve.Err, &ve) {
		var out []Problem
		seen := map[string]bool{}
		for _, l := range leaves(ve) {
			ptr := jsonPtr(l.InstanceLocation)
			if seen[ptr] {
				continue
			}
			seen[ptr] = true
			out = append(out, Problem{Ptr: ptr, Why: describeAt(l, schema)})
		}
		// A failure inside a place (a type list's item) says more than
		// the failure of the place's other alternative (a type name).
		all := slices.Clone(out)
		out = slices.DeleteFunc(out, func(p Problem) bool {
			return slices.ContainsFunc(all, func(q Problem) bool { return strings.HasPrefix(q.Ptr, p.Ptr+"/") })
		})
		if len(out) > 0 {
			return out
		}
	}
	var le *jsonschema.LoadURLError
	if errors.As(err, &le) {
		return []Problem{{Why: fmt.Sprintf("cannot load %q: input_schema must be self-contained (no external $ref or $schema)",
			strings.TrimPrefix(le.URL, "mem://"))}}
	}
	msg := strings.Join(strings.Fields(err.Error()), " ")
	msg = strings.ReplaceAll(msg, schemaURL, "input_schema")
	msg = strings.ReplaceAll(msg, "mem://", "")
	return []Problem{{Why: msg}}
}

// typeNames are JSON Schema's type names.
func typeNames() []string {
	return []string{"array", "boolean", "integer", "null", "number", "object", "string"}
}

// describeAt words the failure l of the schema against the metaschema: a
// "type" whose value is a string but no type name, with the closest name;
// else describe's words.
func describeAt(l *jsonschema.ValidationError, schema map[string]any) string {
	loc := l.InstanceLocation
	n := len(loc)
	typeItem := n > 1 && loc[n-2] == "type" && !underProperties(loc[:n-1]) // type: [a, b]
	if n > 0 && (loc[n-1] == "type" && !underProperties(loc) || typeItem) {
		names := typeNames()
		if v, ok := valueAt(schema, loc).(string); ok && !slices.Contains(names, v) {
			why := fmt.Sprintf("%q is not a type (one of %s)", v, strings.Join(names, ", "))
			if s, ok := suggest.Closest(v, names); ok {
				why += fmt.Sprintf("; did you mean %q?", s)
			}
			return why
		}
	}
	return describe(l.ErrorKind)
}

// underProperties reports a location whose last token names a property
// (…/properties/type), not the keyword "type".
func underProperties(loc []string) bool {
	n := len(loc)
	return n >= 2 && (loc[n-2] == "properties" || loc[n-2] == "$defs" || loc[n-2] == "definitions" || loc[n-2] == "patternProperties")
}

// valueAt is the value at the location in doc; nil when there is none.
func valueAt(doc any, loc []string) any {
	for _, tok := range loc {
		switch d := doc.(type) {
		case map[string]any:
			doc = d[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(d) {
				return nil
			}
			doc = d[i]
		default:
			return nil
		}
	}
	return doc
}

// leaves returns the innermost failures of a validation error, in order.
func leaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		if _, ok := e.ErrorKind.(*kind.Schema); ok {
			return nil
		}
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

func jsonPtr(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escapePtr(t))
	}
	return b.String()
}

// escapePtr escapes a JSON pointer token (RFC 6901).
func escapePtr(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

// argsValidator returns a Tool.ValidateArgs for a compiled schema. A
// compiled schema is immutable, so the function is safe for concurrent use.
func argsValidator(s *jsonschema.Schema) func(map[string]any) error {
	check := valueValidator(s, "arguments do not match input_schema")
	return func(args map[string]any) error {
		if args == nil {
			return check(map[string]any{})
		}
		return check(args)
	}
}

// CompileValue compiles schema like Compile, for any JSON value (decoded
// with json.Decoder.UseNumber or not): a registry tool's output_schema,
// against which its outputs are checked (docs/trusting-tools.md "Typed
// outputs").
func CompileValue(schema map[string]any) (validate func(any) error, problems []Problem) {
	compiled, err := compileSchema(schema)
	if err != nil {
		return nil, compileProblems(err, schema)
	}
	return valueValidator(compiled, "the value does not match the schema"), nil
}

// valueValidator checks a value against s, wording a failure like
// "schema validation failed: /count: want number, got string"; fallback is
// the message of a failure without leaves.
func valueValidator(s *jsonschema.Schema, fallback string) func(any) error {
	return func(v any) error {
		err := s.Validate(v)
		if err == nil {
			return nil
		}
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return errors.New("schema validation failed: " + strings.Join(strings.Fields(err.Error()), " "))
		}
		var msgs []string
		seen := map[string]bool{}
		ls := leaves(ve)
		// The library visits properties in map order: sort for a stable
		// message, the object's own failures before its members'.
		slices.SortStableFunc(ls, func(a, b *jsonschema.ValidationError) int {
			return compareLocations(a.InstanceLocation, b.InstanceLocation)
		})
		for _, l := range ls {
			m := describe(l.ErrorKind)
			if loc := jsonPtr(l.InstanceLocation); loc != "" {
				m = loc + ": " + m
			}
			m = strings.Join(strings.Fields(m), " ")
			if !seen[m] {
				seen[m] = true
				msgs = append(msgs, m)
			}
		}
		if len(msgs) == 0 { // cannot happen: a failure has a leaf
			msgs = []string{fallback}
		}
		if extra := len(msgs) - maxArgErrors; extra > 0 {
			msgs = append(msgs[:maxArgErrors], fmt.Sprintf("and %d more", extra))
		}
		return errors.New("schema validation failed: " + strings.Join(msgs, "; "))
	}
}

// describe renders a failure in one line. Numbers are printed as in JSON:
// the library's printer would group digits ("10,000").
func describe(k jsonschema.ErrorKind) string {
	num := func(r *big.Rat) string {
		f, _ := r.Float64()
		return fmt.Sprint(f)
	}
	var s string
	switch k := k.(type) {
	case *kind.Minimum:
		s = fmt.Sprintf("minimum: got %s, want %s", num(k.Got), num(k.Want))
	case *kind.Maximum:
		s = fmt.Sprintf("maximum: got %s, want %s", num(k.Got), num(k.Want))
	case *kind.ExclusiveMinimum:
		s = fmt.Sprintf("exclusiveMinimum: got %s, want %s", num(k.Got), num(k.Want))
	case *kind.ExclusiveMaximum:
		s = fmt.Sprintf("exclusiveMaximum: got %s, want %s", num(k.Got), num(k.Want))
	case *kind.MultipleOf:
		s = fmt.Sprintf("multipleOf: got %s, want %s", num(k.Got), num(k.Want))
	case *kind.MinLength:
		s = fmt.Sprintf("minLength: got %d, want %d", k.Got, k.Want)
	case *kind.MaxLength:
		s = fmt.Sprintf("maxLength: got %d, want %d", k.Got, k.Want)
	case *kind.MinItems:
		s = fmt.Sprintf("minItems: got %d, want %d", k.Got, k.Want)
	case *kind.MaxItems:
		s = fmt.Sprintf("maxItems: got %d, want %d", k.Got, k.Want)
	case *kind.MinProperties:
		s = fmt.Sprintf("minProperties: got %d, want %d", k.Got, k.Want)
	case *kind.MaxProperties:
		s = fmt.Sprintf("maxProperties: got %d, want %d", k.Got, k.Want)
	case *kind.AdditionalProperties:
		// The library says "not allowed", which ClassifyError would take
		// for a permission failure.
		props := slices.Clone(k.Properties)
		slices.Sort(props)
		q := make([]string, len(props))
		for i, p := range props {
			q[i] = quoteSingle(p)
		}
		if len(q) == 1 {
			s = "unexpected property " + q[0]
		} else {
			s = "unexpected properties " + strings.Join(q, ", ")
		}
	case *kind.AdditionalItems:
		s = fmt.Sprintf("the last %d items are unexpected", k.Count)
	case *kind.UniqueItems:
		s = fmt.Sprintf("items at %d and %d are equal", k.Duplicates[0], k.Duplicates[1])
	default:
		s = k.LocalizedString(printer)
	}
	return strings.Join(strings.Fields(s), " ")
}

// quoteSingle quotes a name the way the library's messages do: 'name'.
func quoteSingle(s string) string {
	q := strconv.Quote(s)
	q = strings.ReplaceAll(q[1:len(q)-1], `\"`, `"`)
	return "'" + strings.ReplaceAll(q, "'", `\'`) + "'"
}

// compareLocations orders instance locations token by token, array
// indexes by number, a parent before its children.
func compareLocations(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] == b[i] {
			continue
		}
		ai, aerr := strconv.Atoi(a[i])
		bi, berr := strconv.Atoi(b[i])
		if aerr == nil && berr == nil {
			return ai - bi
		}
		return strings.Compare(a[i], b[i])
	}
	return len(a) - len(b)
}
