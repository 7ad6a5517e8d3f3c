package format

import (
	"bytes"
	"encoding/json"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// ToolResult is seed 003's format_tool_result: the message that carries a
// tool's result back to the provider the call came from, keyed by the
// provider's own call id. call is the normalized call, output the tool's raw
// JSON output (nil when there is none) and errMsg the error of a failed
// call. The value is for json.Marshal: structs whose fields are in the
// order of their JSON names (so that they marshal exactly as maps with
// those keys would), slices and json.RawMessage.
func ToolResult(call toolrouter.Call, success bool, output json.RawMessage, errMsg string) any {
	return ToolResultContent(call, success, output, errMsg, nil)
}

// ToolResultContent is ToolResult for a call whose tool may have answered
// with MCP content (mcpContent, an MCP backend's CallToolResult; nil for an
// HTTP tool): a successful result holding media is answered in the
// provider's own media blocks (multimodal.go).
func ToolResultContent(call toolrouter.Call, success bool, output json.RawMessage, errMsg string, mcpContent json.RawMessage) any {
	out := bytes.TrimSpace(output)
	d := dialectOf(call.Format)
	if md, ok := d.(mediaDialect); ok && success {
		if blocks := mediaBlocks(mcpContent, out); blocks != nil {
			return md.mediaResult(call, blocks)
		}
	}
	return d.result(call, success, out, resultText(success, out, errMsg))
}

// resultText is the text of a result: the error message of a failure, the
// string itself for a JSON string output, the output's JSON text otherwise.
func resultText(success bool, out []byte, errMsg string) string {
	if !success {
		if errMsg == "" {
			return "tool call failed"
		}
		return errMsg
	}
	if len(out) == 0 {
		return "null"
	}
	if out[0] == '"' {
		var s string
		if json.Unmarshal(out, &s) == nil {
			return s
		}
	}
	return string(out)
}

// jsonValue embeds out in a response: nil for no output, the raw JSON when
// it is valid, and otherwise its text as a JSON string (so that marshalling
// the response cannot fail).
func jsonValue(out []byte) any {
	if len(out) == 0 {
		return nil
	}
	if !json.Valid(out) {
		return string(out)
	}
	return json.RawMessage(out)
}

func isObject(out []byte) bool {
	return len(out) > 0 && out[0] == '{' && json.Valid(out)
}

func status(success bool) string {
	if success {
		return "success"
	}
	return "error"
}
