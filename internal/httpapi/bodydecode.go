package httpapi

import (
	"encoding/json"
	"unicode/utf8"
)

// typedBody is a request body type the request checker decodes a body
// straight into (one decode per body, issue 37): the handler and the rate
// limiter take it from the request's state.
type typedBody interface {
	// field is where the body's property name goes: a *string,
	// *map[string]any, *[]any or *any; nil for none.
	field(name string) any
	reset()
}

// setFromGeneric sets t from obj, a body decoded as a generic value and
// checked against the schema (whose types make the assertions exact).
func setFromGeneric(t typedBody, obj map[string]any) {
	for k, v := range obj {
		switch p := t.field(k).(type) {
		case *string:
			*p, _ = v.(string)
		case *map[string]any:
			*p, _ = v.(map[string]any)
		case *[]any:
			*p, _ = v.([]any)
		case *any:
			*p = v
		}
	}
}

// maxBodyDepth is encoding/json's limit of nesting: a deeper body is left to
// it, whose error the client gets.
const maxBodyDepth = 10000

// decodeInto decodes raw straight into t and checks it against b, the
// body's object schema: the properties b types as strings are decoded as Go
// strings, the others as generic values (a tool call's shape is the
// provider's), each by encoding/json (the values are encoding/json's, as before). It reports false for
// anything but a body that passes (malformed JSON, a value of the wrong
// type, a missing or unknown or repeated property, a deep nesting, a key
// with escapes): the caller then decodes and checks it as a generic value,
// whose problems the client gets in the words and order it always had.
func (b *bodySchema) decodeInto(raw []byte, t typedBody) bool {
	if b.props == nil || len(b.names) > 64 || tooDeep(raw) {
		return false
	}
	in := skipSpace(raw)
	if len(in) == 0 || in[0] != '{' {
		return false
	}
	in = skipSpace(in[1:])
	var seen uint64
	if len(in) > 0 && in[0] == '}' {
		in = in[1:]
	} else {
		for {
			key, rest, ok := plainKey(in)
			if !ok {
				return false
			}
			p, i := b.prop(key)
			if p == nil || seen&(1<<i) != 0 {
				return false
			}
			seen |= 1 << i
			rest = skipSpace(rest)
			if len(rest) == 0 || rest[0] != ':' {
				return false
			}
			rest = skipSpace(rest[1:])
			if rest, ok = p.decodeValue(rest, t.field(b.names[i])); !ok {
				return false
			}
			rest = skipSpace(rest)
			if len(rest) == 0 {
				return false
			}
			if rest[0] == '}' {
				in = rest[1:]
				break
			}
			if rest[0] != ',' {
				return false
			}
			in = skipSpace(rest[1:])
		}
	}
	if len(skipSpace(in)) != 0 {
		return false
	}
	return seen&b.requiredBits == b.requiredBits && !b.requiredElse
}

// prop is the schema and index (in names) of the property key.
func (b *bodySchema) prop(key []byte) (*bodySchema, int) {
	p := b.props[string(key)]
	if p == nil {
		return nil, -1
	}
	for i, n := range b.names {
		if n == string(key) {
			return p, i
		}
	}
	return nil, -1
}

// decodeValue decodes the JSON value at the start of in into dst (one of
// typedBody.field's pointers) and checks it against b, returning what
// follows it.
func (b *bodySchema) decodeValue(in []byte, dst any) ([]byte, bool) {
	if dst == nil || len(in) == 0 {
		return nil, false
	}
	n := valueEnd(in)
	if n <= 0 {
		return nil, false
	}
	val, rest := in[:n], in[n:]
	// The value's JSON type, from its first byte, must be one dst holds (a
	// null never passes here: nullable schemas are left to the generic
	// check).
	switch v := dst.(type) {
	case *string:
		if val[0] != '"' {
			return nil, false
		}
		if s, ok := plainString(val); ok {
			*v = s
		} else if json.Unmarshal(val, v) != nil {
			return nil, false
		}
		if b.enum != nil || b.empty || b.nullable {
			return rest, b.check(*v, nil, nil)
		}
		return rest, b.checkString(*v, nil, nil)
	case *map[string]any:
		// Decoded as an interface value, which encoding/json builds without
		// reflection.
		var x any
		if val[0] != '{' || json.Unmarshal(val, &x) != nil {
			return nil, false
		}
		*v, _ = x.(map[string]any)
		return rest, *v != nil && b.check(*v, nil, nil)
	case *[]any:
		var x any
		if val[0] != '[' || json.Unmarshal(val, &x) != nil {
			return nil, false
		}
		*v, _ = x.([]any)
		return rest, *v != nil && b.check(*v, nil, nil)
	case *any:
		if json.Unmarshal(val, v) != nil {
			return nil, false
		}
		return rest, *v != nil && b.check(*v, nil, nil)
	}
	return nil, false
}

// plainString is the JSON string val when it has no escapes and is valid
// UTF-8 without control characters (as encoding/json decodes it).
func plainString(val []byte) (string, bool) {
	body := val[1 : len(val)-1]
	for _, c := range body {
		if c < 0x20 || c == '\\' || c == '"' {
			return "", false
		}
	}
	if !utf8.Valid(body) {
		return "", false
	}
	return string(body), true
}

// valueEnd is the length of the JSON value at the start of in, as far as
// its brackets and quotes say (encoding/json then checks it), or -1.
func valueEnd(in []byte) int {
	depth := 0
	for i := 0; i < len(in); i++ {
		switch c := in[i]; c {
		case '"':
			for i++; i < len(in) && in[i] != '"'; i++ {
				if in[i] == '\\' {
					i++
				}
			}
			if i >= len(in) {
				return -1
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 { // ends the literal before it
				return i
			}
			if depth--; depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
	}
	if depth == 0 {
		return len(in)
	}
	return -1
}

// plainKey reads an object key without escapes or bytes outside printable
// ASCII (a key with them is left to the generic decoding).
func plainKey(in []byte) (key, rest []byte, ok bool) {
	if len(in) == 0 || in[0] != '"' {
		return nil, nil, false
	}
	for i := 1; i < len(in); i++ {
		switch c := in[i]; {
		case c == '"':
			return in[1:i], in[i+1:], true
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return nil, nil, false
		}
	}
	return nil, nil, false
}

func skipSpace(b []byte) []byte {
	for i, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return b[i:]
		}
	}
	return nil
}

// tooDeep reports whether raw nests arrays and objects deeper than
// maxBodyDepth (strings skipped).
func tooDeep(raw []byte) bool {
	depth := 0
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '{', '[':
			if depth++; depth > maxBodyDepth {
				return true
			}
		case '}', ']':
			depth--
		case '"':
			for i++; i < len(raw) && raw[i] != '"'; i++ {
				if raw[i] == '\\' {
					i++
				}
			}
		}
	}
	return false
}
