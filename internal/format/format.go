// Package format speaks the tool-call dialects of the LLM providers: it
// detects which provider shape a decoded tool call has, normalizes it into a
// toolrouter.Call, shapes a tool's result the way that provider expects it
// back, and exports tool definitions each provider's API accepts verbatim.
//
// Each provider is one dialect, a type in its own file (openai.go,
// anthropic.go, langchain.go, gemini.go, bedrock.go, mcp.go, unknown.go)
// that knows the provider's calls, result messages and tool definitions;
// the list dialects names them all. Adding a provider is its file and a
// line in that list (and, for POST /route/batch to take the provider's
// whole assistant turns apart, their shape in turn.go). The rest of the
// package is what the dialects share: Normalize, Detect and their helpers
// (this file), the result message and its text (result.go), MCP media
// blocks (multimodal.go), tool definitions (schema.go), and whole
// assistant turns (turn.go).
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

// dialect is one provider's tool-call dialect.
type dialect interface {
	// format is the provider format the dialect speaks.
	format() toolrouter.Format
	// marked reports whether the dialect's calls carry a key that names
	// the provider outright (a Gemini part's functionCall, a Bedrock
	// block's toolUse, JSON-RPC's tools/call): Detect tries those
	// dialects before the ones of plain {name, arguments}-like shapes,
	// whose keys other providers' calls may hold too.
	marked() bool
	// detect reports whether the object m is a call of this dialect.
	detect(m map[string]any) bool
	// normalize reads the call m; what it could read stays in the Call
	// on error.
	normalize(m map[string]any) (toolrouter.Call, error)
	// result is the message that answers call (result.go): out is the
	// tool's trimmed output and text the result's text (resultText). The
	// messages are structs whose fields are in the order of their JSON
	// names, so that they marshal exactly as maps with those keys would.
	result(call toolrouter.Call, success bool, out []byte, text string) any
	// definition is tool t as the provider's tools list takes it, named
	// name, described desc, taking the parameters schema (a copy).
	definition(t *toolrouter.Tool, name, desc string, schema map[string]any) map[string]any
}

// mediaDialect is a dialect whose result messages carry media in the
// provider's own blocks (multimodal.go); the others' carry text only.
type mediaDialect interface {
	// mediaResult answers a successful call whose output holds media.
	mediaResult(call toolrouter.Call, blocks []block) any
}

// turnDialect is a dialect that answers a whole assistant turn with one
// message holding every call's result (Turn.Messages); the others answer
// it with the results themselves, one message each.
type turnDialect interface {
	turnMessage(results []any) any
}

// dialects is every provider this package speaks, in the order
// /schemas/{provider} names them (its 404 message, api/openapi.yaml): a
// new provider goes last. unknown answers any format not listed.
var dialects = []dialect{openAI{}, anthropic{}, langChain{}, unknown{}, gemini{}, bedrock{}, mcp{}}

// detectOrder is dialects in the order Detect tries them: the marked
// ones, then the others, each in the order of dialects.
var detectOrder = func() []dialect {
	var marked, plain []dialect
	for _, d := range dialects {
		if d.marked() {
			marked = append(marked, d)
		} else {
			plain = append(plain, d)
		}
	}
	return append(marked, plain...)
}()

// dialectOf returns the dialect of format f: unknown for a format not
// listed.
func dialectOf(f toolrouter.Format) dialect {
	for _, d := range dialects {
		if d.format() == f {
			return d
		}
	}
	return unknown{}
}

// SchemaFormats lists the formats /schemas/{provider} serves.
func SchemaFormats() []toolrouter.Format {
	fs := make([]toolrouter.Format, len(dialects))
	for i, d := range dialects {
		fs[i] = d.format()
	}
	return fs
}

// ParseFormat returns the format named exactly s; ok is false for any other
// string.
func ParseFormat(s string) (toolrouter.Format, bool) {
	for _, d := range dialects {
		if f := d.format(); string(f) == s {
			return f, true
		}
	}
	return "", false
}

// Detect returns the provider format of a decoded JSON value: unknown for
// anything but an object, else the format of the first dialect of
// detectOrder whose detect matches, else unknown. That order gives these
// rules, checked in order, the first match winning:
//
//  1. a "functionCall" object (a Gemini part): gemini
//  2. a "toolUse" object (a Bedrock Converse content block): bedrock
//  3. "jsonrpc" with "method" "tools/call": mcp
//  4. a "function" object (Chat Completions, Ollama), or an "arguments"
//     key of any type (legacy function_call, Responses and Realtime items,
//     MCP params): openai
//  5. "type" "tool_use" or an "input" key: anthropic
//  6. "type" "tool_call" or an "args" key: langchain
//  7. anything else (the empty object, Llama's {name, parameters}): unknown
func Detect(payload any) toolrouter.Format {
	return detect(payload).format()
}

func detect(payload any) dialect {
	if m, ok := payload.(map[string]any); ok {
		for _, d := range detectOrder {
			if d.detect(m) {
				return d
			}
		}
	}
	return unknown{}
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
	return normalize(payload, detect(payload))
}

// NormalizeAs normalizes payload by the rules of format f (any format this
// package does not know is treated as unknown).
func NormalizeAs(payload any, f toolrouter.Format) (toolrouter.Call, error) {
	return normalize(payload, dialectOf(f))
}

func normalize(payload any, d dialect) (toolrouter.Call, error) {
	m, ok := payload.(map[string]any)
	if !ok {
		return toolrouter.Call{}, invalid("payload must be a dict, got %s", kind(payload))
	}
	c, err := d.normalize(m)
	c.Format = d.format()
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

// DecodeArgs turns an arguments value into an object: an object is used as
// is (not copied), JSON null, "" and "null" mean {}, and any other string must
// be the JSON text of an object.
func DecodeArgs(v any) (map[string]any, error) {
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

// has reports whether m has key.
func has(m map[string]any, key string) bool {
	_, ok := m[key]
	return ok
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
