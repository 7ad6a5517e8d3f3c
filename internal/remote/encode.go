package remote

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
)

// maxEncodeDepth is the nesting depth past which encodeArgs leaves the
// value to json.Marshal (which also reports cycles).
const maxEncodeDepth = 256

// encodePool holds scratch buffers for encodeArgs.
var encodePool = sync.Pool{New: func() any {
	b := make([]byte, 0, 1024)
	return &b
}}

// encodeArgs returns exactly what json.Marshal(args) returns. Decoded JSON
// (maps, slices, strings, float64, bool, nil: what arguments are) and Go
// integers and floats are written directly, without reflection; any other
// value hands the whole object to json.Marshal.
func encodeArgs(args map[string]any) ([]byte, error) {
	bp := encodePool.Get().(*[]byte)
	buf, ok := appendJSON((*bp)[:0], args, 0)
	var out []byte
	if ok {
		out = append([]byte(nil), buf...)
	}
	if cap(buf) <= 64<<10 { // do not keep a huge buffer alive
		*bp = buf[:0]
		encodePool.Put(bp)
	}
	if ok {
		return out, nil
	}
	return json.Marshal(args)
}

// appendJSON appends the encoding/json encoding of v (with HTML escaping,
// as json.Marshal does) to dst; ok is false when v holds a value it does
// not handle, and dst is then to be discarded.
func appendJSON(dst []byte, v any, depth int) (_ []byte, ok bool) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case string:
		return appendString(dst, x), true
	case bool:
		if x {
			return append(dst, "true"...), true
		}
		return append(dst, "false"...), true
	case float64:
		return appendFloat(dst, x, 64)
	case float32:
		return appendFloat(dst, float64(x), 32)
	case int:
		return strconv.AppendInt(dst, int64(x), 10), true
	case int64:
		return strconv.AppendInt(dst, x, 10), true
	case int32:
		return strconv.AppendInt(dst, int64(x), 10), true
	case int16:
		return strconv.AppendInt(dst, int64(x), 10), true
	case int8:
		return strconv.AppendInt(dst, int64(x), 10), true
	case uint:
		return strconv.AppendUint(dst, uint64(x), 10), true
	case uint64:
		return strconv.AppendUint(dst, x, 10), true
	case uint32:
		return strconv.AppendUint(dst, uint64(x), 10), true
	case uint16:
		return strconv.AppendUint(dst, uint64(x), 10), true
	case uint8:
		return strconv.AppendUint(dst, uint64(x), 10), true
	case map[string]any:
		if x == nil {
			return append(dst, "null"...), true
		}
		if depth >= maxEncodeDepth {
			return dst, false
		}
		var small [16]string
		keys := small[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, k)
			dst = append(dst, ':')
			if dst, ok = appendJSON(dst, x[k], depth+1); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), true
	case []any:
		if x == nil {
			return append(dst, "null"...), true
		}
		if depth >= maxEncodeDepth {
			return dst, false
		}
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, ok = appendJSON(dst, e, depth+1); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	}
	return dst, false
}

// appendFloat is encoding/json's encoding of a float of the given bit
// size; NaN and infinities are not handled (json.Marshal reports them).
func appendFloat(dst []byte, f float64, bits int) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, false
	}
	abs := math.Abs(f)
	fmt := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			fmt = 'e'
		}
	}
	dst = strconv.AppendFloat(dst, f, fmt, -1, bits)
	if fmt == 'e' {
		// clean up e-09 to e-9
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, true
}

const hexDigits = "0123456789abcdef"

// appendString is encoding/json's string encoding with HTML escaping:
// quotes, backslashes, control characters, <, > and & escaped, invalid
// UTF-8 replaced by \ufffd, U+2028 and U+2029 escaped.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= ' ' && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
