// Package format speaks the tool-call dialects of the LLM providers: it
// detects which provider shape a decoded tool call has, normalizes it into a
// toolrouter.Call, shapes a tool's result the way that provider expects it
// back, and exports tool definitions each provider's API accepts verbatim.
//
// Payloads are values decoded by encoding/json into any (map[string]any,
// []any, string, float64, bool, nil). Every error is a *toolrouter.Error with
// code EINVALID and field "tool_call".
package format

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// schemaFormats is the order /schemas/{provider} lists its providers in.
var schemaFormats = []toolrouter.Format{
	toolrouter.FormatOpenAI,
	toolrouter.FormatAnthropic,
	toolrouter.FormatLangChain,
	toolrouter.FormatUnknown,
	toolrouter.FormatGemini,
	toolrouter.FormatBedrock,
	toolrouter.FormatMCP,
}

// SchemaFormats lists the formats /schemas/{provider} serves.
func SchemaFormats() []toolrouter.Format {
	return append([]toolrouter.Format(nil), schemaFormats...)
}

// ParseFormat returns the format named exactly s; ok is false for any other
// string.
func ParseFormat(s string) (toolrouter.Format, bool) {
	for _, f := range schemaFormats {
		if string(f) == s {
			return f, true
		}
	}
	return "", false
}

// Normalized is a tool call its reader already normalized into exactly
// the Call Normalize makes of the same call decoded as a map: httpapi's
// typed reading of the common OpenAI and Anthropic shapes of POST /route
// (issue 10: no map per object, no allocation per string). As a payload,
// Normalize returns its Call.
type Normalized struct{ Call toolrouter.Call }

// Normalize detects the format of payload and normalizes it.
func Normalize(payload any) (toolrouter.Call, error) {
	if n, ok := payload.(*Normalized); ok {
		return n.Call, nil
	}
	return NormalizeAs(payload, Detect(payload))
}

// NormalizeAs normalizes payload by the rules of format f (any format this
// package does not know is treated as unknown).
func NormalizeAs(payload any, f toolrouter.Format) (toolrouter.Call, error) {
	m, ok := payload.(map[string]any)
	if !ok {
		return toolrouter.Call{}, invalid("payload must be a dict, got %s", kind(payload))
	}
	var (
		c   toolrouter.Call
		err error
	)
	switch f {
	case toolrouter.FormatOpenAI:
		c, err = normalizeOpenAI(m)
	case toolrouter.FormatAnthropic:
		c, err = normalizeAnthropic(m)
	case toolrouter.FormatLangChain:
		c, err = normalizeLangChain(m)
	case toolrouter.FormatGemini:
		c, err = normalizeGemini(m)
	case toolrouter.FormatBedrock:
		c, err = normalizeBedrock(m)
	case toolrouter.FormatMCP:
		c, err = normalizeMCP(m)
	default:
		f = toolrouter.FormatUnknown
		c, err = normalizeUnknown(m)
	}
	c.Format = f
	if err != nil {
		// What could be read stays: the name helps the caller see which
		// call failed, and the id and Extra let the failure be answered
		// in the provider's own terms.
		c.Arguments = nil
		return c, err
	}
	return c, nil
}

// invalid is the error of a tool call that cannot be normalized.
func invalid(format string, args ...any) *toolrouter.Error {
	return toolrouter.Invalid("tool_call", format, args...)
}

// toolName returns the name under key in m; it must be a non-empty string.
// The messages start with "parse error" so that ClassifyError files them
// under parse, and all contain "name".
func toolName(m map[string]any, key string) (string, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return "", invalid("parse error: tool call has no name")
	}
	s, ok := v.(string)
	if !ok {
		return "", invalid("parse error: tool call name must be a string, got %s", kind(v))
	}
	if strings.TrimSpace(s) == "" {
		return "", invalid("parse error: tool call has an empty name")
	}
	return s, nil
}

// decodeArgs turns an arguments value into an object: an object is used as
// is (not copied), JSON null, "" and "null" mean {}, and any other string must
// be the JSON text of an object.
func decodeArgs(v any) (map[string]any, error) {
	switch a := v.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return a, nil
	case string:
		s := strings.TrimSpace(a)
		if s == "" {
			return map[string]any{}, nil
		}
		var out any
		if err := json.Unmarshal([]byte(s), &out); err != nil {
			return nil, invalid("parse error: arguments are not valid JSON: %v", err)
		}
		if out == nil { // the text "null"
			return map[string]any{}, nil
		}
		obj, ok := out.(map[string]any)
		if !ok {
			return nil, invalid("parse error: arguments must be a JSON object, got %s", kind(out))
		}
		return obj, nil
	default:
		return nil, invalid("parse error: arguments must be a JSON object, got %s", kind(v))
	}
}

// callID returns the first of keys that m holds as a string, even "" (an
// id sent empty is answered empty: api/openapi.yaml, RouteResult
// provider_call_id), and whether there was one.
func callID(m map[string]any, keys ...string) (string, bool) {
	for _, k := range keys {
		if s, ok := m[k].(string); ok {
			return s, true
		}
	}
	return "", false
}

// obj returns m[key] when it is an object.
func obj(m map[string]any, key string) (map[string]any, bool) {
	o, ok := m[key].(map[string]any)
	return o, ok
}

// kind names the type of a decoded JSON value in the seed's (Python's) words.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "dict"
	case []any:
		return "list"
	case string:
		return "str"
	case bool:
		return "bool"
	case float64, json.Number, int, int64:
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// idString renders a JSON-RPC id (string or number) as text.
func idString(v any) string {
	switch id := v.(type) {
	case nil:
		return ""
	case string:
		return id
	case float64:
		return strconv.FormatFloat(id, 'f', -1, 64)
	case json.Number:
		return id.String()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
