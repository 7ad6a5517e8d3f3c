//go:build stdjsonresult

package router

import (
	"encoding/json"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// encodeResult is json.Marshal(res): the ablation of encode.go (-tags
// stdjsonresult; bench/README.md decision table), which checks every raw
// value again whatever checked says.
func encodeResult(res *toolrouter.Result, _ bool) ([]byte, error) { return json.Marshal(res) }
