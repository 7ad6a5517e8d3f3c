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
// call. The value is built from maps and json.RawMessage for json.Marshal.
func ToolResult(call toolrouter.Call, success bool, output json.RawMessage, errMsg string) any {
	out := bytes.TrimSpace(output)
	text := resultText(success, out, errMsg)
	id := call.ProviderCallID
	switch call.Format {
	case toolrouter.FormatOpenAI:
		if call.Extra["openai_api"] == "responses" {
			return map[string]any{"type": "function_call_output", "call_id": id, "output": text}
		}
		return map[string]any{"role": "tool", "tool_call_id": id, "content": text}

	case toolrouter.FormatAnthropic:
		return map[string]any{"type": "tool_result", "tool_use_id": id, "content": text, "is_error": !success}

	case toolrouter.FormatLangChain:
		return map[string]any{"type": "tool", "tool_call_id": id, "name": call.ToolName,
			"content": text, "status": status(success)}

	case toolrouter.FormatGemini:
		response := map[string]any{"output": jsonValue(out)}
		if !success {
			response = map[string]any{"error": text}
		}
		fr := map[string]any{"name": call.ToolName, "response": response}
		if id != "" {
			fr["id"] = id
		}
		return map[string]any{"functionResponse": fr}

	case toolrouter.FormatBedrock:
		content := []any{map[string]any{"text": text}}
		if success && isObject(out) {
			content = []any{map[string]any{"json": json.RawMessage(out)}}
		}
		return map[string]any{"toolResult": map[string]any{"toolUseId": id, "content": content, "status": status(success)}}

	case toolrouter.FormatMCP:
		result := map[string]any{
			"content": []any{map[string]any{"type": "text", "text": text}},
			"isError": !success,
		}
		if success && isObject(out) {
			result["structuredContent"] = json.RawMessage(out)
		}
		return map[string]any{"jsonrpc": "2.0", "id": call.Extra["jsonrpc_id"], "result": result}
	}

	var e any
	if !success {
		e = text
	}
	return map[string]any{"tool_call_id": id, "name": call.ToolName, "success": success,
		"output": jsonValue(out), "error": e}
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
