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
	if success && call.Format != toolrouter.FormatUnknown {
		if blocks := mediaBlocks(mcpContent, bytes.TrimSpace(output)); blocks != nil {
			if r := mediaResult(call, blocks); r != nil {
				return r
			}
		}
	}
	out := bytes.TrimSpace(output)
	text := resultText(success, out, errMsg)
	id := call.ProviderCallID
	switch call.Format {
	case toolrouter.FormatOpenAI:
		if call.Extra["openai_api"] == "responses" {
			return &openAIResponsesResult{CallID: id, Output: text, Type: "function_call_output"}
		}
		return &openAIChatResult{Content: text, Role: "tool", ToolCallID: id}

	case toolrouter.FormatAnthropic:
		return &anthropicResult{Content: text, IsError: !success, ToolUseID: id, Type: "tool_result"}

	case toolrouter.FormatLangChain:
		return &langChainResult{Content: text, Name: call.ToolName, Status: status(success), ToolCallID: id, Type: "tool"}

	case toolrouter.FormatGemini:
		fr := &geminiResult{}
		fr.FunctionResponse.ID = id
		fr.FunctionResponse.Name = call.ToolName
		if success {
			fr.FunctionResponse.Response = geminiOutput{Output: jsonValue(out)}
		} else {
			fr.FunctionResponse.Response = geminiError{Error: text}
		}
		return fr

	case toolrouter.FormatBedrock:
		r := &bedrockResult{}
		r.ToolResult.Status = status(success)
		r.ToolResult.ToolUseID = id
		if success && isObject(out) {
			r.ToolResult.Content = []any{bedrockJSON{JSON: json.RawMessage(out)}}
		} else {
			r.ToolResult.Content = []any{bedrockText{Text: text}}
		}
		return r

	case toolrouter.FormatMCP:
		r := &mcpResult{ID: call.Extra["jsonrpc_id"], JSONRPC: "2.0"}
		r.Result.Content = []any{mcpText{Text: text, Type: "text"}}
		r.Result.IsError = !success
		if success && isObject(out) {
			r.Result.StructuredContent = json.RawMessage(out)
		}
		return r
	}

	var e any
	if !success {
		e = text
	}
	return &unknownResult{Error: e, Name: call.ToolName, Output: jsonValue(out), Success: success, ToolCallID: id}
}

// The result messages. Their fields are in the order of their JSON names,
// as json.Marshal orders a map's keys.
type (
	openAIChatResult struct {
		Content    string `json:"content"`
		Role       string `json:"role"`
		ToolCallID string `json:"tool_call_id"`
	}
	openAIResponsesResult struct {
		CallID string `json:"call_id"`
		Output string `json:"output"`
		Type   string `json:"type"`
	}
	anthropicResult struct {
		Content   string `json:"content"`
		IsError   bool   `json:"is_error"`
		ToolUseID string `json:"tool_use_id"`
		Type      string `json:"type"`
	}
	langChainResult struct {
		Content    string `json:"content"`
		Name       string `json:"name"`
		Status     string `json:"status"`
		ToolCallID string `json:"tool_call_id"`
		Type       string `json:"type"`
	}
	geminiResult struct {
		FunctionResponse struct {
			ID       string `json:"id,omitempty"`
			Name     string `json:"name"`
			Response any    `json:"response"`
		} `json:"functionResponse"`
	}
	geminiOutput struct {
		Output any `json:"output"`
	}
	geminiError struct {
		Error string `json:"error"`
	}
	bedrockResult struct {
		ToolResult struct {
			Content   []any  `json:"content"`
			Status    string `json:"status"`
			ToolUseID string `json:"toolUseId"`
		} `json:"toolResult"`
	}
	bedrockJSON struct {
		JSON json.RawMessage `json:"json"`
	}
	bedrockText struct {
		Text string `json:"text"`
	}
	mcpResult struct {
		ID      any    `json:"id"`
		JSONRPC string `json:"jsonrpc"`
		Result  struct {
			Content           []any           `json:"content"`
			IsError           bool            `json:"isError"`
			StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
		} `json:"result"`
	}
	mcpText struct {
		Text string `json:"text"`
		Type string `json:"type"`
	}
	unknownResult struct {
		Error      any    `json:"error"`
		Name       string `json:"name"`
		Output     any    `json:"output"`
		Success    bool   `json:"success"`
		ToolCallID string `json:"tool_call_id"`
	}
)

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
