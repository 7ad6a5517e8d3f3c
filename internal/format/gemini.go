package format

import (
	"strings"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// gemini is the dialect of the Gemini API.
type gemini struct{}

func (gemini) format() toolrouter.Format { return toolrouter.FormatGemini }
func (gemini) marked() bool              { return true }

// detect: a "functionCall" object (a Gemini part).
func (gemini) detect(m map[string]any) bool {
	_, ok := obj(m, "functionCall")
	return ok
}

// normalize reads a Gemini part {"functionCall": {"name", "args", "id"?},
// "thoughtSignature"?}, or a bare FunctionCall object when forced. The
// part's thoughtSignature travels in Extra["thoughtSignature"]: Gemini
// wants it back on the functionCall part of the history.
func (gemini) normalize(m map[string]any) (toolrouter.Call, error) {
	fc, ok := obj(m, "functionCall")
	if !ok {
		fc = m
	}
	var c toolrouter.Call
	c.ProviderCallID, c.HasProviderCallID = callID(fc, "id")
	if sig, ok := m["thoughtSignature"]; ok && sig != nil {
		c.Extra = map[string]any{"thoughtSignature": sig}
	}
	var err error
	if c.ToolName, err = toolName(fc, "name"); err != nil {
		return c, err
	}
	c.Arguments, err = DecodeArgs(fc["args"])
	return c, err
}

// result: a functionResponse part whose response is {"output": the
// output} or {"error": the message}.
func (gemini) result(call toolrouter.Call, success bool, out []byte, text string) any {
	fr := &geminiResult{}
	fr.FunctionResponse.ID = call.ProviderCallID
	fr.FunctionResponse.Name = call.ToolName
	if success {
		fr.FunctionResponse.Response = geminiOutput{Output: jsonValue(out)}
	} else {
		fr.FunctionResponse.Response = geminiError{Error: text}
	}
	return fr
}

// geminiImages are the image media types Gemini takes in a
// functionResponse.
var geminiImages = []string{"image/png", "image/jpeg", "image/webp"}

// mediaResult: a functionResponse whose parts hold the images as
// inlineData and whose output is the rest as text.
func (gemini) mediaResult(call toolrouter.Call, blocks []block) any {
	r := &geminiMediaResult{}
	r.FunctionResponse.ID, r.FunctionResponse.Name = call.ProviderCallID, call.ToolName
	var texts []string
	for _, b := range blocks {
		if b.image(geminiImages...) {
			var p geminiPart
			p.InlineData.Data, p.InlineData.MIMEType = b.Data, strings.ToLower(b.MIMEType)
			r.FunctionResponse.Parts = append(r.FunctionResponse.Parts, p)
		} else if t := b.text(); t != "" {
			texts = append(texts, t)
		}
	}
	r.FunctionResponse.Response = geminiOutput{Output: strings.Join(texts, "\n")}
	return r
}

// turnMessage: one user content holding every functionResponse part.
func (gemini) turnMessage(results []any) any { return geminiContent{Parts: results, Role: "user"} }

// definition: one functionDeclarations entry.
func (gemini) definition(_ *toolrouter.Tool, name, desc string, schema map[string]any) map[string]any {
	decl := map[string]any{"name": name, "description": desc}
	// Gemini rejects an OBJECT without properties ("parameters.properties:
	// should be non-empty for OBJECT type"); a tool without parameters
	// leaves them out.
	if p := GeminiParameters(schema); p != nil {
		decl["parameters"] = p
	}
	return decl
}

type (
	geminiContent struct {
		Parts []any  `json:"parts"`
		Role  string `json:"role"`
	}
	geminiResult struct {
		FunctionResponse struct {
			ID       string `json:"id,omitempty"`
			Name     string `json:"name"`
			Response any    `json:"response"`
		} `json:"functionResponse"`
	}
	geminiOutput struct {
		Output any `json:"output"`
	}
	geminiError struct {
		Error string `json:"error"`
	}
	geminiMediaResult struct {
		FunctionResponse struct {
			ID       string       `json:"id,omitempty"`
			Name     string       `json:"name"`
			Parts    []geminiPart `json:"parts"`
			Response geminiOutput `json:"response"`
		} `json:"functionResponse"`
	}
	geminiPart struct {
		InlineData struct {
			Data     string `json:"data"`
			MIMEType string `json:"mimeType"`
		} `json:"inlineData"`
	}
)

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

// GeminiParameters is a tool's input schema as a Gemini
// functionDeclaration's parameters (the OpenAPI subset /schemas/gemini
// exports); nil when the tool takes no parameters, which Gemini wants left
// out.
func GeminiParameters(schema map[string]any) map[string]any {
	if p := geminiSchema(inputSchema(schema)); len(asObject(p["properties"])) > 0 {
		return p
	}
	return nil
}
