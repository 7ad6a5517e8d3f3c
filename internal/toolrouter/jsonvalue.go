package toolrouter

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// DecodeJSON decodes the JSON text s into the value json.Unmarshal into an
// any gives (map[string]any, []any, string, float64, bool, nil), with fewer
// allocations on the request path (issue 10): strings are substrings of s,
// not copies. It takes only plain text: ok is false for invalid JSON and for
// anything it leaves to encoding/json (escapes in strings, invalid UTF-8,
// numbers beyond float64, deep nesting), where the caller must decode s with
// encoding/json instead, for its value or its error.
//
// It earns its place by issue 10's rule (>= 5%): without it and the typed
// reading of POST /route built on its scanner (JSONReader), that is with
// encoding/json for every body and arguments text, toolrouterd executes
// 291k instead of 261k user-space instructions per route (+11.5%, about 8%
// of its CPU once the kernel's share is counted; callgrind, memory://,
// test/echo), and BenchmarkRouteHTTP/openai 120k instead of 84k per op.
func DecodeJSON(s string) (v any, ok bool) {
	d := jsonDecoder{s: s}
	d.space()
	if v, ok = d.value(0); !ok {
		return nil, false
	}
	d.space()
	return v, d.i == len(s)
}

// jsonMaxDepth bounds the nesting DecodeJSON takes (encoding/json's own
// limit, 10000, is left to it).
const jsonMaxDepth = 256

type jsonDecoder struct {
	s string
	i int
}

func (d *jsonDecoder) space() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *jsonDecoder) value(depth int) (any, bool) {
	if d.i >= len(d.s) || depth > jsonMaxDepth {
		return nil, false
	}
	switch c := d.s[d.i]; {
	case c == '{':
		return d.object(depth)
	case c == '[':
		return d.array(depth)
	case c == '"':
		s, ok := d.str()
		if !ok {
			return nil, false
		}
		return s, true
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	}
	return nil, false
}

func (d *jsonDecoder) literal(lit string) bool {
	if len(d.s)-d.i < len(lit) || d.s[d.i:d.i+len(lit)] != lit {
		return false
	}
	d.i += len(lit)
	return true
}

func (d *jsonDecoder) object(depth int) (any, bool) {
	d.i++ // {
	m := make(map[string]any)
	d.space()
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
		return m, true
	}
	for {
		if d.i >= len(d.s) || d.s[d.i] != '"' {
			return nil, false
		}
		k, ok := d.str()
		if !ok {
			return nil, false
		}
		d.space()
		if d.i >= len(d.s) || d.s[d.i] != ':' {
			return nil, false
		}
		d.i++
		d.space()
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		m[k] = v // a repeated key: the last wins, as in encoding/json
		d.space()
		if d.i >= len(d.s) {
			return nil, false
		}
		switch d.s[d.i] {
		case ',':
			d.i++
			d.space()
		case '}':
			d.i++
			return m, true
		default:
			return nil, false
		}
	}
}

func (d *jsonDecoder) array(depth int) (any, bool) {
	d.i++ // [
	a := make([]any, 0)
	d.space()
	if d.i < len(d.s) && d.s[d.i] == ']' {
		d.i++
		return a, true
	}
	for {
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		d.space()
		if d.i >= len(d.s) {
			return nil, false
		}
		switch d.s[d.i] {
		case ',':
			d.i++
			d.space()
		case ']':
			d.i++
			return a, true
		default:
			return nil, false
		}
	}
}

// str reads a string in valid UTF-8 (encoding/json would replace invalid
// bytes) without control characters, as a substring of s when it has no
// escapes; of the escapes it takes the one-letter ones (\uXXXX is left to
// encoding/json).
func (d *jsonDecoder) str() (string, bool) {
	start := d.i + 1
	ascii, escaped := true, false
	for j := start; j < len(d.s); j++ {
		switch c := d.s[j]; {
		case c == '"':
			v := d.s[start:j]
			if !ascii && !utf8.ValidString(v) {
				return "", false
			}
			d.i = j + 1
			if escaped {
				return unescape(v)
			}
			return v, true
		case c == '\\':
			escaped = true
			j++ // the escaped byte (checked by unescape)
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// unescape replaces the one-letter escapes of v; ok is false for any other.
func unescape(v string) (string, bool) {
	var b strings.Builder // one allocation: String does not copy
	b.Grow(len(v))
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\\' {
			if i++; i == len(v) {
				return "", false
			}
			switch c = v[i]; c {
			case '"', '\\', '/':
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			default:
				return "", false
			}
		}
		b.WriteByte(c)
	}
	return b.String(), true
}

// number reads a number of the JSON grammar and converts it as
// encoding/json does (strconv.ParseFloat; out of range is left to it).
func (d *jsonDecoder) number() (any, bool) {
	start := d.i
	if d.s[d.i] == '-' {
		d.i++
	}
	switch {
	case d.i < len(d.s) && d.s[d.i] == '0':
		d.i++
	case d.digits() == 0:
		return nil, false
	}
	if d.i < len(d.s) && d.s[d.i] == '.' {
		d.i++
		if d.digits() == 0 {
			return nil, false
		}
	}
	if d.i < len(d.s) && (d.s[d.i] == 'e' || d.s[d.i] == 'E') {
		d.i++
		if d.i < len(d.s) && (d.s[d.i] == '+' || d.s[d.i] == '-') {
			d.i++
		}
		if d.digits() == 0 {
			return nil, false
		}
	}
	f, err := strconv.ParseFloat(d.s[start:d.i], 64)
	if err != nil {
		return nil, false
	}
	return f, true
}

func (d *jsonDecoder) digits() int {
	n := 0
	for d.i < len(d.s) && d.s[d.i] >= '0' && d.s[d.i] <= '9' {
		d.i++
		n++
	}
	return n
}

// JSONReader reads a JSON text piece by piece, by DecodeJSON's rules (ok is
// false for what DecodeJSON declines as well as for what the caller's
// reading does not expect), so that a caller can decode a shape it knows
// into its own variables, without a map per object and an allocation per
// string (httpapi: the body of POST /route). Strings are substrings of the
// text when they have no escapes.
type JSONReader struct{ d jsonDecoder }

// NewJSONReader returns a reader of s.
func NewJSONReader(s string) JSONReader { return JSONReader{d: jsonDecoder{s: s}} }

// Members reads an object: for each member in order, fn gets its key with
// the reader at the member's value, which fn must read (with String, Null,
// Value or Members) before returning true; false stops the reading, and
// Members then returns false.
func (r *JSONReader) Members(fn func(key string) bool) bool {
	d := &r.d
	d.space()
	if d.i >= len(d.s) || d.s[d.i] != '{' {
		return false
	}
	d.i++
	d.space()
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
		return true
	}
	for {
		if d.i >= len(d.s) || d.s[d.i] != '"' {
			return false
		}
		k, ok := d.str()
		if !ok {
			return false
		}
		d.space()
		if d.i >= len(d.s) || d.s[d.i] != ':' {
			return false
		}
		d.i++
		d.space()
		if !fn(k) {
			return false
		}
		d.space()
		if d.i >= len(d.s) {
			return false
		}
		switch d.s[d.i] {
		case ',':
			d.i++
			d.space()
		case '}':
			d.i++
			return true
		default:
			return false
		}
	}
}

// String reads a string.
func (r *JSONReader) String() (string, bool) {
	d := &r.d
	d.space()
	if d.i >= len(d.s) || d.s[d.i] != '"' {
		return "", false
	}
	return d.str()
}

// Null reads a null if one is next, and reports whether it did.
func (r *JSONReader) Null() bool {
	d := &r.d
	d.space()
	return d.i < len(d.s) && d.s[d.i] == 'n' && d.literal("null")
}

// Next is the first byte of the next value (0 at the end of the text).
func (r *JSONReader) Next() byte {
	d := &r.d
	d.space()
	if d.i >= len(d.s) {
		return 0
	}
	return d.s[d.i]
}

// Value reads any value as DecodeJSON decodes it.
func (r *JSONReader) Value() (any, bool) {
	r.d.space()
	return r.d.value(0)
}

// End reports whether nothing but white space is left.
func (r *JSONReader) End() bool {
	r.d.space()
	return r.d.i == len(r.d.s)
}
