//go:build !stdjsonresult

package router

import (
	segjson "github.com/segmentio/encoding/json"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// encodeResult is json.Marshal(res), by segmentio/encoding/json: the same
// bytes (TestResultJSONAsEncodingJSON) for about half the instructions of
// encoding/json, whose reflection walk of a Result was the largest single
// cost of a route's finish (issue 37; bench/README.md decision table).
// Built with -tags stdjsonresult, encoding/json encodes it (the ablation,
// encode_std.go).
func encodeResult(res *toolrouter.Result) ([]byte, error) { return segjson.Marshal(res) }
