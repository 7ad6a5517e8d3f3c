package format

// geminiKeys are the fields of Gemini's function-declaration Schema, "a
// select subset of an OpenAPI 3.0 schema object": anyOf, default,
// description, enum (strings only), example, format, items, maximum,
// maxItems, maxLength, maxProperties, minimum, minItems, minLength,
// minProperties, nullable, pattern, properties, propertyOrdering, required,
// title, type. Sources: the generativelanguage v1beta Schema
// (https://docs.cloud.google.com/nodejs/docs/reference/generativelanguage/latest/generativelanguage/protos.google.ai.generativelanguage.v1beta.ischema)
// and the js-genai types.Schema interface
// (https://googleapis.github.io/js-genai/release_docs/interfaces/types.Schema.html).
// Everything else ($schema, $id, $defs, $ref, additionalProperties, strict,
// patternProperties, unevaluatedProperties, examples, allOf, not, ...) is
// dropped.
var geminiKeys = map[string]bool{
	"anyOf": true, "default": true, "description": true, "enum": true,
	"example": true, "format": true, "items": true, "maximum": true,
	"maxItems": true, "maxLength": true, "maxProperties": true, "minimum": true,
	"minItems": true, "minLength": true, "minProperties": true, "nullable": true,
	"pattern": true, "properties": true, "propertyOrdering": true,
	"required": true, "title": true, "type": true,
}

// geminiFormats are the formats Gemini accepts: "only 'enum' and
// 'date-time' are supported for STRING type" (the API's 400 message, e.g.
// google-gemini/gemini-cli#3178), float/double for NUMBER and int32/int64
// for INTEGER (Vertex AI Schema reference).
var geminiFormats = map[string]bool{
	"enum": true, "date-time": true, "float": true, "double": true, "int32": true, "int64": true,
}

// geminiSchema returns a copy of the JSON Schema s reduced to what Gemini's
// Schema accepts:
//   - unsupported keywords are dropped, at every level;
//   - "const": v becomes "enum": [v], and oneOf becomes anyOf;
//   - a type list such as ["string", "null"] becomes the first non-null type
//     plus "nullable": true;
//   - enum is kept only when every value is a string ("enum only allowed for
//     STRING type"), and then implies "type": "string";
//   - formats Gemini rejects are dropped.
func geminiSchema(s map[string]any) map[string]any {
	out := make(map[string]any, len(s))
	for k, v := range s {
		switch k {
		case "properties":
			props := map[string]any{}
			for name, sub := range asObject(v) {
				if sm, ok := sub.(map[string]any); ok {
					props[name] = geminiSchema(sm)
				}
			}
			out[k] = props
		case "items":
			if sm, ok := v.(map[string]any); ok {
				out[k] = geminiSchema(sm)
			}
		case "anyOf", "oneOf":
			if _, both := s["anyOf"]; k == "oneOf" && both {
				continue
			}
			if list, ok := v.([]any); ok {
				subs := make([]any, 0, len(list))
				for _, e := range list {
					if sm, ok := e.(map[string]any); ok {
						subs = append(subs, geminiSchema(sm))
					}
				}
				out["anyOf"] = subs
			}
		case "const":
			if _, has := s["enum"]; !has {
				setEnum(out, []any{v})
			}
		case "enum":
			if list, ok := v.([]any); ok {
				setEnum(out, list)
			}
		case "type":
			setType(out, v)
		case "format":
			if f, ok := v.(string); ok && geminiFormats[f] {
				out[k] = f
			}
		default:
			if geminiKeys[k] {
				out[k] = v
			}
		}
	}
	if _, ok := out["enum"]; ok {
		out["type"] = "string"
	}
	return out
}

// setEnum sets out's enum to values when they are all strings.
func setEnum(out map[string]any, values []any) {
	strs := make([]any, 0, len(values))
	for _, e := range values {
		s, ok := e.(string)
		if !ok {
			return
		}
		strs = append(strs, s)
	}
	if len(strs) > 0 {
		out["enum"] = strs
	}
}

// setType sets out's type from a JSON Schema type: a string, or a list
// whose first non-null entry is used and whose "null" means nullable.
func setType(out map[string]any, v any) {
	switch t := v.(type) {
	case string:
		if t == "null" {
			out["nullable"] = true
			return
		}
		out["type"] = t
	case []any:
		for _, e := range t {
			s, _ := e.(string)
			if s == "null" {
				out["nullable"] = true
			} else if _, set := out["type"]; !set && s != "" {
				out["type"] = s
			}
		}
	}
}
