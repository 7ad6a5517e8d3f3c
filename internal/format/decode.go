package format

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// maxFastDepth is the nesting depth past which decodeObject leaves the
// text to encoding/json.
const maxFastDepth = 128

// decodeObject decodes the JSON text of an object, s, into exactly the
// value json.Unmarshal would give an `any` (map[string]any, []any, string,
// float64, bool, nil) without its copies: strings without escapes are
// substrings of s, not copies. ok is false for anything it does not take
// care of itself (text that is not an object, invalid JSON, a number out of
// range, deep nesting), which the caller hands to json.Unmarshal to get its
// exact result or error.
func decodeObject(s string) (m map[string]any, ok bool) {
	d := fastDecoder{s: s}
	d.skipSpace()
	if d.i >= len(d.s) || d.s[d.i] != '{' {
		return nil, false
	}
	v, ok := d.value(0)
	if !ok {
		return nil, false
	}
	d.skipSpace()
	if d.i != len(d.s) {
		return nil, false
	}
	return v.(map[string]any), true
}

// DecodeJSON returns exactly what json.Unmarshal(data, &v) gives a v of
// type any: the same value (map[string]any, []any, string, float64, bool,
// nil) or the same error. It copies data once and decodes strings without
// escapes as substrings of that copy rather than one by one, so it
// allocates far less; anything it does not take care of itself (invalid
// JSON, a number out of range, deep nesting) goes through json.Unmarshal.
func DecodeJSON(data []byte) (any, error) {
	d := fastDecoder{s: string(data)}
	d.skipSpace()
	if v, ok := d.value(0); ok {
		d.skipSpace()
		if d.i == len(d.s) {
			return v, nil
		}
	}
	var v any
	err := json.Unmarshal(data, &v)
	return v, err
}

type fastDecoder struct {
	s string
	i int
}

func (d *fastDecoder) skipSpace() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// value decodes the value at d.i (no leading space).
func (d *fastDecoder) value(depth int) (any, bool) {
	if d.i >= len(d.s) {
		return nil, false
	}
	switch c := d.s[d.i]; {
	case c == '{':
		return d.object(depth + 1)
	case c == '[':
		return d.array(depth + 1)
	case c == '"':
		s, ok := d.str()
		if !ok {
			return nil, false
		}
		return s, true
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	}
	return nil, false
}

func (d *fastDecoder) literal(lit string) bool {
	if len(d.s)-d.i >= len(lit) && d.s[d.i:d.i+len(lit)] == lit {
		d.i += len(lit)
		return true
	}
	return false
}

func (d *fastDecoder) object(depth int) (any, bool) {
	if depth > maxFastDepth {
		return nil, false
	}
	d.i++ // '{'
	m := make(map[string]any)
	d.skipSpace()
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
		d.skipSpace()
		if d.i >= len(d.s) || d.s[d.i] != ':' {
			return nil, false
		}
		d.i++
		d.skipSpace()
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		m[k] = v // a repeated key keeps its last value, as in encoding/json
		d.skipSpace()
		if d.i >= len(d.s) {
			return nil, false
		}
		switch d.s[d.i] {
		case ',':
			d.i++
			d.skipSpace()
		case '}':
			d.i++
			return m, true
		default:
			return nil, false
		}
	}
}

func (d *fastDecoder) array(depth int) (any, bool) {
	if depth > maxFastDepth {
		return nil, false
	}
	d.i++ // '['
	a := make([]any, 0)
	d.skipSpace()
	if d.i < len(d.s) && d.s[d.i] == ']' {
		d.i++
		return a, true
	}
	for {
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		d.skipSpace()
		if d.i >= len(d.s) {
			return nil, false
		}
		switch d.s[d.i] {
		case ',':
			d.i++
			d.skipSpace()
		case ']':
			d.i++
			return a, true
		default:
			return nil, false
		}
	}
}

// str decodes the string at d.i (which is '"'). A string without escapes
// of valid UTF-8 is a substring of the text; any other goes through
// encoding/json, so that escapes and invalid UTF-8 are decoded exactly as
// it decodes them.
func (d *fastDecoder) str() (string, bool) {
	start := d.i
	simple := true
	i := d.i + 1
	for ; i < len(d.s); i++ {
		c := d.s[i]
		if c == '"' {
			break
		}
		if c == '\\' {
			simple = false
			i++ // skip the escaped byte, which may be '"'
			continue
		}
		if c < ' ' {
			return "", false // invalid JSON: let encoding/json say so
		}
		if c >= utf8.RuneSelf {
			simple = false
		}
	}
	if i >= len(d.s) {
		return "", false
	}
	d.i = i + 1
	body := d.s[start+1 : i]
	if simple || utf8.ValidString(body) && !hasByte(body, '\\') {
		return body, true
	}
	var out string
	if json.Unmarshal([]byte(d.s[start:d.i]), &out) != nil {
		return "", false
	}
	return out, true
}

func hasByte(s string, b byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return true
		}
	}
	return false
}

// number decodes the number at d.i, which must follow JSON's grammar, as
// encoding/json does (strconv.ParseFloat); a number out of range is left to
// encoding/json's error.
func (d *fastDecoder) number() (any, bool) {
	start := d.i
	i := d.i
	if i < len(d.s) && d.s[i] == '-' {
		i++
	}
	switch {
	case i < len(d.s) && d.s[i] == '0':
		i++
	case i < len(d.s) && d.s[i] >= '1' && d.s[i] <= '9':
		for i < len(d.s) && d.s[i] >= '0' && d.s[i] <= '9' {
			i++
		}
	default:
		return nil, false
	}
	if i < len(d.s) && d.s[i] == '.' {
		i++
		if i >= len(d.s) || d.s[i] < '0' || d.s[i] > '9' {
			return nil, false
		}
		for i < len(d.s) && d.s[i] >= '0' && d.s[i] <= '9' {
			i++
		}
	}
	if i < len(d.s) && (d.s[i] == 'e' || d.s[i] == 'E') {
		i++
		if i < len(d.s) && (d.s[i] == '+' || d.s[i] == '-') {
			i++
		}
		if i >= len(d.s) || d.s[i] < '0' || d.s[i] > '9' {
			return nil, false
		}
		for i < len(d.s) && d.s[i] >= '0' && d.s[i] <= '9' {
			i++
		}
	}
	f, err := strconv.ParseFloat(d.s[start:i], 64)
	if err != nil {
		return nil, false
	}
	d.i = i
	return f, true
}
