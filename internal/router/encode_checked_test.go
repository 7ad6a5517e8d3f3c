//go:build !stdjsonresult

package router

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestCheckedResultIsNotParsedAgain: a result whose output is marked
// checked is encoded without parsing its raw values again (issue 37
// item 1: the encoder trusts the executor's check), which shows as a
// broken raw value passing through; unchecked, it is refused as before.
func TestCheckedResultIsNotParsedAgain(t *testing.T) {
	res := &toolrouter.Result{ToolCallID: "tc_x", Output: json.RawMessage(`{"a":`), ProviderMetadata: noMetadata}
	if _, err := encodeResult(res, false); err == nil {
		t.Fatal("an unchecked broken output was encoded")
	}
	b, err := encodeResult(res, true)
	if err != nil || !bytes.Contains(b, []byte(`"output":{"a":,`)) {
		t.Fatalf("a checked output was parsed again: %s, %v", b, err)
	}
}
