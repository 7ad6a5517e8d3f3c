package router

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// BenchmarkEncodeResultBig: a result with a 5 MiB output encoded by
// encodeResult (segmentio/encoding/json) and by encoding/json. Under
// callgrind (instructions, load-insensitive): 309M against 452M per
// encoding, so the library that wins on a small result does not lose on a
// large one.
func BenchmarkEncodeResultBig(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"items":[`)
	for i := 0; sb.Len() < 5<<20; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"id":12345,"name":"some <text> & more","tags":["a","b"],"v":1.25}`)
	}
	sb.WriteString(`]}`)
	out := json.RawMessage(sb.String())
	res := &toolrouter.Result{ToolCallID: "tc_x", PlanID: "p", Output: out, ProviderMetadata: noMetadata, Success: true}
	b.Run("seg", func(b *testing.B) {
		for b.Loop() {
			_, _ = encodeResult(res, false)
		}
	})
	b.Run("seg-checked", func(b *testing.B) {
		for b.Loop() {
			_, _ = encodeResult(res, true)
		}
	})
	b.Run("std", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(res)
		}
	})
}
