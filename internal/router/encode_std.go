//go:build stdjsonresult

package router

import (
	"encoding/json"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// encodeResult is json.Marshal(res): the ablation of encode.go (-tags
// stdjsonresult; bench/README.md decision table).
func encodeResult(res *toolrouter.Result) ([]byte, error) { return json.Marshal(res) }
