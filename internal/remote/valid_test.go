package remote

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	segjson "github.com/segmentio/encoding/json"
)

// TestValidAsEncodingJSON: the check decodeReply makes of a reply
// (segmentio's Valid) takes exactly what encoding/json's Valid takes, on
// 300,000 inputs mutated from JSON's corner cases (numbers, escapes,
// surrogates, invalid UTF-8, control characters, trailing data, white
// space, nesting), so that no reply's fate changed with it.
func TestValidAsEncodingJSON(t *testing.T) {
	seeds := []string{`{"a":1}`, `[1,2,3]`, `"x"`, `1e5`, `-0.5E+3`, `true`, `null`, `{"a":"\u00e9\ud800"}`, "\"\xff\xfe\"", "\"a\x01\"",
		`01`, `1.`, `.5`, `{"a":1,}`, `[1,]`, ` {"a" : [ 1 , 2 ] } `, `{"a":1}{}`, `"\x"`, `"\u12"`, `1e`, `-`, `{"":""}`, `[[[[[]]]]]`,
		`{"a":tru}`, `nul`, "\"\u2028\"", `{"a":"<&>"}`, `"\/"`, `[1e400]`, `-01`, `0e0`, `{"a"1}`, `{"a":}`, "[\t\r\n]", "\x00", "1\x00",
		`"`, `[`, `{`, `]`, `}`, "\xef\xbb\xbf{}", `{"a":{"b":[1,{"c":"d"}]}}`}
	chars := []byte(`{}[]",:.-+eE0123456789 ` + "\n\t\r" + `trufalsn\u/abx` + "\x00\x1f\x7f\xc3\xa9\xff\xe2\x80\xa8")
	rng := rand.New(rand.NewPCG(37, 1))
	for i := range 300_000 {
		b := []byte(seeds[i%len(seeds)])
		if i >= len(seeds) {
			for k := rng.IntN(4); k >= 0; k-- {
				switch p := rng.IntN(len(b) + 1); rng.IntN(3) {
				case 0:
					if p < len(b) {
						b[p] = chars[rng.IntN(len(chars))]
					}
				case 1:
					b = append(b[:p], append([]byte{chars[rng.IntN(len(chars))]}, b[p:]...)...)
				default:
					if p < len(b) {
						b = append(b[:p], b[p+1:]...)
					}
				}
			}
		}
		if std, seg := json.Valid(b), segjson.Valid(b); std != seg {
			t.Fatalf("%q: encoding/json Valid %v, segmentio Valid %v", b, std, seg)
		}
	}
}
