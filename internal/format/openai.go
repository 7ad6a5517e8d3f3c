package format

import "github.com/toolrouterd/toolrouterd/internal/toolrouter"

// openAI is the dialect of OpenAI's Chat Completions, Responses and
// Realtime APIs, and of Ollama, which speaks Chat Completions' shape.
type openAI struct{}

func (openAI) format() toolrouter.Format { return toolrouter.FormatOpenAI }
func (openAI) marked() bool              { return false }

// detect: a "function" object (Chat Completions, Ollama), or an
// "arguments" key of any type (legacy function_call, Responses and
// Realtime items, MCP params).
func (openAI) detect(m map[string]any) bool {
	if _, ok := obj(m, "function"); ok {
		return true
	}
	return has(m, "arguments")
}

// normalize reads the nested {"id", "function": {"name", "arguments"}}
// shape of Chat Completions and Ollama, or the flattened {"name",
// "arguments"} of legacy function_call messages and Responses/Realtime
// function_call items. Arguments may be a JSON string or an object.
func (openAI) normalize(m map[string]any) (toolrouter.Call, error) {
	var c toolrouter.Call
	// Responses items are answered by call_id, not by the item's id.
	c.ProviderCallID, c.HasProviderCallID = callID(m, "call_id", "id")
	if _, ok := m["call_id"]; ok || m["type"] == "function_call" {
		c.Extra = map[string]any{"openai_api": "responses"}
	}
	src := m
	if fn, ok := obj(m, "function"); ok {
		src = fn
	}
	var err error
	if c.ToolName, err = toolName(src, "name"); err != nil {
		return c, err
	}
	c.Arguments, err = DecodeArgs(src["arguments"])
	return c, err
}

// responses reports whether call came from the Responses API, which is
// answered by a function_call_output item rather than a tool message.
func responses(call toolrouter.Call) bool { return call.Extra["openai_api"] == "responses" }

func (openAI) result(call toolrouter.Call, _ bool, _ []byte, text string) any {
	if responses(call) {
		return &openAIResponsesResult[string]{CallID: call.ProviderCallID, Output: text, Type: "function_call_output"}
	}
	return &openAIChatResult{Content: text, Role: "tool", ToolCallID: call.ProviderCallID}
}

// openAIImages are the image media types OpenAI takes in a tool result.
var openAIImages = []string{"image/png", "image/jpeg", "image/webp", "image/gif"}

// mediaResult: Responses input_image items; a Chat Completions tool
// message carries text only, the media a marker each.
func (openAI) mediaResult(call toolrouter.Call, blocks []block) any {
	if !responses(call) {
		return &openAIChatResult{Content: joinedText(blocks), Role: "tool", ToolCallID: call.ProviderCallID}
	}
	out := convert(blocks, func(b block) (any, bool) {
		return openAIInputImage{ImageURL: "data:" + b.MIMEType + ";base64," + b.Data, Type: "input_image"}, b.image(openAIImages...)
	}, typedText("input_text"))
	return &openAIResponsesResult[[]any]{CallID: call.ProviderCallID, Output: out, Type: "function_call_output"}
}

func (openAI) definition(_ *toolrouter.Tool, name, desc string, schema map[string]any) map[string]any {
	return map[string]any{"type": "function", "function": map[string]any{
		"name": name, "description": desc, "parameters": schema}}
}

type (
	openAIChatResult struct {
		Content    string `json:"content"`
		Role       string `json:"role"`
		ToolCallID string `json:"tool_call_id"`
	}
	// openAIResponsesResult's output is text, or items holding media.
	openAIResponsesResult[O string | []any] struct {
		CallID string `json:"call_id"`
		Output O      `json:"output"`
		Type   string `json:"type"`
	}
	openAIInputImage struct {
		ImageURL string `json:"image_url"`
		Type     string `json:"type"`
	}
)
