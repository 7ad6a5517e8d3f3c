package format

import "github.com/toolrouterd/toolrouterd/internal/toolrouter"

// Detect returns the provider format of a decoded JSON value. The rules are
// checked in order and the first match wins:
//
//  1. not an object: unknown
//  2. a "functionCall" object (a Gemini part): gemini
//  3. a "toolUse" object (a Bedrock Converse content block): bedrock
//  4. "jsonrpc" with "method" "tools/call": mcp
//  5. a "function" object (Chat Completions, Ollama): openai
//  6. an "arguments" key of any type (legacy function_call, Responses and
//     Realtime items, MCP params): openai
//  7. "type" "tool_use" or an "input" key: anthropic
//  8. "type" "tool_call" or an "args" key: langchain
//  9. anything else (the empty object, Llama's {name, parameters}): unknown
func Detect(payload any) toolrouter.Format {
	m, ok := payload.(map[string]any)
	if !ok {
		return toolrouter.FormatUnknown
	}
	if _, ok := obj(m, "functionCall"); ok {
		return toolrouter.FormatGemini
	}
	if _, ok := obj(m, "toolUse"); ok {
		return toolrouter.FormatBedrock
	}
	if _, ok := m["jsonrpc"]; ok && m["method"] == "tools/call" {
		return toolrouter.FormatMCP
	}
	if _, ok := obj(m, "function"); ok {
		return toolrouter.FormatOpenAI
	}
	if _, ok := m["arguments"]; ok {
		return toolrouter.FormatOpenAI
	}
	typ, _ := m["type"].(string)
	if _, ok := m["input"]; ok || typ == "tool_use" {
		return toolrouter.FormatAnthropic
	}
	if _, ok := m["args"]; ok || typ == "tool_call" {
		return toolrouter.FormatLangChain
	}
	return toolrouter.FormatUnknown
}
