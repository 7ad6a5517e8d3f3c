//go:build !stdjsonresult

package router

import (
	"sync"

	segjson "github.com/segmentio/encoding/json"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// encodeFlags are segmentio's json.Marshal's: HTML escaped, map keys
// sorted, as encoding/json.
const encodeFlags = segjson.EscapeHTML | segjson.SortMapKeys

// encodeBuffers are the buffers results are encoded into before their
// exact copy, kept for the next result whatever their size, as
// segmentio's json.Marshal keeps its own.
var encodeBuffers = sync.Pool{New: func() any { return new([]byte) }}

// encodeResult is json.Marshal(res), by segmentio/encoding/json: the same
// bytes (TestResultJSONAsEncodingJSON) for about half the instructions of
// encoding/json, whose reflection walk of a Result was the largest single
// cost of a route's finish (issue 37; bench/README.md decision table).
// Built with -tags stdjsonresult, encoding/json encodes it (the ablation,
// encode_std.go).
//
// checked reports that every raw JSON value res holds (its output, whole
// output, and what its provider result took from them) is known to be
// one valid JSON value (toolrouter.Outcome.OutputChecked): they are then
// compacted into the result without being parsed again to check them
// (segmentio's TrustRawMessage), the same bytes
// (TestResultJSONAsEncodingJSON, TestOutputOnceAsBefore): an output is checked once, by
// its executor, not again by the encoder (issue 37 item 1).
func encodeResult(res *toolrouter.Result, checked bool) ([]byte, error) {
	flags := encodeFlags
	if checked {
		flags |= segjson.TrustRawMessage
	}
	bp := encodeBuffers.Get().(*[]byte)
	defer encodeBuffers.Put(bp)
	b, err := segjson.Append((*bp)[:0], res, flags)
	*bp = b[:0]
	if err != nil {
		return nil, err
	}
	return append(make([]byte, 0, len(b)), b...), nil
}
