package format

import (
	"fmt"
	"strings"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TurnAPI names the provider API a whole assistant turn came from; it
// decides the shape of the messages that answer the turn's tool calls.
type TurnAPI string

// The assistant turns SplitTurn reads (README, "A whole assistant turn").
const (
	// TurnOpenAIChat is a Chat Completions assistant message (or a whole
	// completion with one choice, or an Ollama /api/chat response): one
	// {"role":"tool"} message answers each call.
	TurnOpenAIChat TurnAPI = "openai_chat"
	// TurnOpenAIResponses is a Responses API output array (or a whole
	// response): one function_call_output item answers each call.
	TurnOpenAIResponses TurnAPI = "openai_responses"
	// TurnAnthropic is a Messages API assistant message (or a whole
	// response): one user message holds every tool_result block.
	TurnAnthropic TurnAPI = "anthropic"
	// TurnGemini is a Gemini content (or a candidate, or a whole response
	// with one candidate): one user content holds every functionResponse.
	TurnGemini TurnAPI = "gemini"
	// TurnBedrock is a Bedrock Converse assistant message (or a whole
	// Converse response): one user message holds every toolResult block.
	TurnBedrock TurnAPI = "bedrock"
	// TurnLangChain is a LangChain AIMessage: one ToolMessage answers each
	// call.
	TurnLangChain TurnAPI = "langchain"
)

// Turn is a whole assistant turn taken apart: its tool calls, in order,
// each as POST /route takes it, and the API whose messages answer them.
type Turn struct {
	API   TurnAPI
	Calls []any
}

// callFormat is the format each call of a turn of that API must detect as:
// the router then answers it in the shape the turn's messages need.
var callFormat = map[TurnAPI]toolrouter.Format{
	TurnOpenAIChat:      toolrouter.FormatOpenAI,
	TurnOpenAIResponses: toolrouter.FormatOpenAI,
	TurnAnthropic:       toolrouter.FormatAnthropic,
	TurnGemini:          toolrouter.FormatGemini,
	TurnBedrock:         toolrouter.FormatBedrock,
	TurnLangChain:       toolrouter.FormatLangChain,
}

// Skipped content: text and reasoning, and calls the provider ran itself
// (their results are in the same turn). Anything else that is not a tool
// call is an error rather than silently left unanswered.
var (
	anthropicSkipped = map[string]bool{
		"text": true, "thinking": true, "redacted_thinking": true,
		"server_tool_use": true, "mcp_tool_use": true, "mcp_tool_result": true,
		"citations": true, "container_upload": true,
	}
	responsesSkipped = map[string]bool{
		"message": true, "reasoning": true, "web_search_call": true,
		"file_search_call": true, "code_interpreter_call": true,
		"image_generation_call": true, "mcp_call": true, "mcp_list_tools": true,
		"tool_search_call": true, "compaction": true,
	}
	bedrockSkipped = []string{"text", "reasoningContent", "citationsContent", "image", "document", "video", "guardContent", "cachePoint"}
)

// IsTurn reports whether payload looks like a whole assistant turn (or a
// provider's whole response) rather than one tool call: POST /route
// refuses it and points at POST /route/batch's "message".
func IsTurn(payload any) bool {
	m, ok := payload.(map[string]any)
	if !ok {
		return false
	}
	for _, k := range []string{"tool_calls", "choices", "candidates", "parts"} {
		if _, ok := m[k]; ok {
			return true
		}
	}
	for _, k := range []string{"output", "message", "content"} {
		switch m[k].(type) {
		case []any, map[string]any:
			return true
		}
	}
	role, _ := m["role"].(string)
	return role == "assistant" || role == "model"
}

// SplitTurn takes a whole assistant turn apart (README, "A whole assistant
// turn"). Errors are *toolrouter.Error of code EINVALID whose field is the
// path of the offending value under "message".
func SplitTurn(msg any) (*Turn, error) {
	return splitTurn(msg, "message", 0)
}

func splitTurn(msg any, path string, depth int) (*Turn, error) {
	if depth > 3 {
		return nil, turnError(path, "not an assistant turn: nested too deeply")
	}
	if list, ok := msg.([]any); ok {
		return splitList(list, path)
	}
	m, ok := msg.(map[string]any)
	if !ok {
		return nil, turnError(path, "must be an assistant message (JSON object) or a Responses output array, got %s", toolrouter.JSONKind(msg))
	}
	if role, ok := m["role"].(string); ok && role != "assistant" && role != "model" && role != "ai" {
		return nil, turnError(path+".role", "must be assistant (or model): the turn whose tool calls to answer, got %q", role)
	}
	switch {
	case has(m, "choices"): // a whole Chat Completions response
		return only(m, "choices", path, depth)
	case has(m, "candidates"): // a whole Gemini response
		return only(m, "candidates", path, depth)
	case has(m, "parts"): // a Gemini content
		parts, ok := m["parts"].([]any)
		if !ok {
			return nil, turnError(path+".parts", "must be a list (JSON array), got %s", toolrouter.JSONKind(m["parts"]))
		}
		return splitGemini(parts, path+".parts")
	case has(m, "tool_calls") || has(m, "function_call"):
		return splitToolCalls(m, path)
	}
	if c, ok := m["content"].(map[string]any); ok { // a Gemini candidate
		return splitTurn(c, path+".content", depth+1)
	}
	if out, ok := m["output"].([]any); ok { // a whole Responses response
		return splitResponses(out, path+".output")
	}
	if out, ok := m["output"].(map[string]any); ok { // a whole Converse response
		return splitTurn(out["message"], path+".output.message", depth+1)
	}
	if inner, ok := m["message"].(map[string]any); ok && !has(m, "role") { // a whole Ollama /api/chat response, or a choice
		return splitTurn(inner, path+".message", depth+1)
	}
	switch c := m["content"].(type) {
	case []any:
		return splitList(c, path+".content")
	case string, nil:
		if has(m, "role") { // text only: nothing to answer
			return &Turn{API: TurnOpenAIChat, Calls: []any{}}, nil
		}
	}
	return nil, turnError(path, "not an assistant turn of a known shape: send an OpenAI Chat assistant message (tool_calls), an Anthropic or Bedrock assistant message (role, content), a Gemini content (parts) or candidate, a Responses output array, or the provider's whole response")
}

// only splits the one element of the list m[key] (a response's choices or
// candidates).
func only(m map[string]any, key, path string, depth int) (*Turn, error) {
	list, ok := m[key].([]any)
	if !ok || len(list) != 1 {
		return nil, turnError(path+"."+key, "must hold exactly one %s (ask the provider for one), got %s", strings.TrimSuffix(key, "s"), describeList(m[key]))
	}
	el, _ := list[0].(map[string]any)
	inner := "message"
	if key == "candidates" {
		inner = "content"
	}
	return splitTurn(el[inner], fmt.Sprintf("%s.%s[0].%s", path, key, inner), depth+1)
}

func describeList(v any) string {
	if l, ok := v.([]any); ok {
		return fmt.Sprintf("%d", len(l))
	}
	return toolrouter.JSONKind(v)
}

// splitToolCalls reads a Chat Completions (or Ollama, or LangChain
// AIMessage) assistant message.
func splitToolCalls(m map[string]any, path string) (*Turn, error) {
	if _, ok := m["function_call"]; ok && m["function_call"] != nil && !has(m, "tool_calls") {
		return nil, turnError(path+".function_call", "the legacy function_call is answered by a role function message: send it as tool_call to POST /route")
	}
	t := &Turn{API: TurnOpenAIChat, Calls: []any{}}
	if typ, _ := m["type"].(string); typ == "ai" || typ == "AIMessage" || typ == "AIMessageChunk" {
		t.API = TurnLangChain
	}
	if m["tool_calls"] == nil { // "tool_calls": null on a text answer
		return t, nil
	}
	calls, ok := m["tool_calls"].([]any)
	if !ok {
		return nil, turnError(path+".tool_calls", "must be a list (JSON array), got %s", toolrouter.JSONKind(m["tool_calls"]))
	}
	for i, c := range calls {
		p := fmt.Sprintf("%s.tool_calls[%d]", path, i)
		if cm, ok := c.(map[string]any); ok {
			if typ, ok := cm["type"].(string); ok && typ != "function" && typ != "tool_call" {
				return nil, turnError(p+".type", "%q is not a function call toolrouterd can answer", typ)
			}
		}
		if err := t.add(c, p); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// splitList reads a list of content blocks or output items: Anthropic
// blocks and Responses items both carry "type" and are told apart by it,
// Bedrock blocks carry none.
func splitList(list []any, path string) (*Turn, error) {
	for _, el := range list {
		m, _ := el.(map[string]any)
		typ, ok := m["type"].(string)
		switch {
		case !ok && m != nil:
			return splitBedrock(list, path)
		case typ == "function_call" || responsesSkipped[typ]:
			return splitResponses(list, path)
		case typ == "tool_use" || anthropicSkipped[typ] || strings.HasSuffix(typ, "_tool_result"):
			return splitBlocks(list, path)
		}
	}
	if len(list) == 0 {
		return &Turn{API: TurnAnthropic, Calls: []any{}}, nil
	}
	return splitBlocks(list, path) // reports the first block it cannot read
}

// splitBlocks reads an Anthropic content array.
func splitBlocks(list []any, path string) (*Turn, error) {
	t := &Turn{API: TurnAnthropic, Calls: []any{}}
	for i, el := range list {
		p := fmt.Sprintf("%s[%d]", path, i)
		typ, _ := blockType(el)
		switch {
		case typ == "tool_use":
			if err := t.add(el, p); err != nil {
				return nil, err
			}
		case anthropicSkipped[typ] || strings.HasSuffix(typ, "_tool_result"):
		default:
			return nil, unknownBlock(p, el, "an Anthropic tool_use block, nor text or thinking")
		}
	}
	return t, nil
}

// splitResponses reads a Responses API output array.
func splitResponses(list []any, path string) (*Turn, error) {
	t := &Turn{API: TurnOpenAIResponses, Calls: []any{}}
	for i, el := range list {
		p := fmt.Sprintf("%s[%d]", path, i)
		typ, _ := blockType(el)
		switch {
		case typ == "function_call":
			if err := t.add(el, p); err != nil {
				return nil, err
			}
		case responsesSkipped[typ]:
		default:
			return nil, unknownBlock(p, el, "a Responses function_call item, nor a message or reasoning item")
		}
	}
	return t, nil
}

// splitGemini reads the parts of a Gemini content: the functionCall parts
// are calls; text, thoughts, code execution and signatures are skipped.
func splitGemini(parts []any, path string) (*Turn, error) {
	t := &Turn{API: TurnGemini, Calls: []any{}}
	for i, el := range parts {
		p := fmt.Sprintf("%s[%d]", path, i)
		m, ok := el.(map[string]any)
		if !ok {
			return nil, turnError(p, "must be a dict (JSON object), got %s", toolrouter.JSONKind(el))
		}
		if has(m, "functionResponse") {
			return nil, turnError(p+".functionResponse", "is an answer, not a call: send the model's turn")
		}
		if has(m, "functionCall") {
			if err := t.add(el, p); err != nil {
				return nil, err
			}
		}
	}
	return t, nil
}

// splitBedrock reads a Bedrock Converse content array.
func splitBedrock(list []any, path string) (*Turn, error) {
	t := &Turn{API: TurnBedrock, Calls: []any{}}
next:
	for i, el := range list {
		p := fmt.Sprintf("%s[%d]", path, i)
		m, ok := el.(map[string]any)
		if !ok {
			return nil, turnError(p, "must be a dict (JSON object), got %s", toolrouter.JSONKind(el))
		}
		if has(m, "toolUse") {
			if err := t.add(el, p); err != nil {
				return nil, err
			}
			continue
		}
		for _, k := range bedrockSkipped {
			if has(m, k) {
				continue next
			}
		}
		return nil, unknownBlock(p, el, "a Bedrock toolUse block, nor text or reasoning")
	}
	return t, nil
}

// add appends one call, which must be an object that detects as the
// turn's format: otherwise its result would answer it in another shape.
func (t *Turn) add(c any, path string) error {
	if _, ok := c.(map[string]any); !ok {
		return turnError(path, "must be a dict (JSON object), got %s", toolrouter.JSONKind(c))
	}
	if want, got := callFormat[t.API], Detect(c); got != want {
		return turnError(path, "is not a well-formed %s tool call (it reads as %s)", want, got)
	}
	t.Calls = append(t.Calls, c)
	return nil
}

// Messages returns the messages that answer the turn, ready to append to
// the conversation, built from the results of its calls (in order):
// OpenAI Chat and LangChain one message per call, Responses one
// function_call_output item per call, Anthropic and Bedrock one user
// message with every result block, Gemini one user content with every
// functionResponse part. A turn without calls is answered by none.
func (t *Turn) Messages(results []*toolrouter.Result) []any {
	replies := make([]any, len(results))
	for i, r := range results {
		replies[i] = r.ProviderResult
	}
	if len(replies) == 0 {
		return []any{}
	}
	if td, ok := dialectOf(callFormat[t.API]).(turnDialect); ok {
		return []any{td.turnMessage(replies)}
	}
	return replies
}

func blockType(el any) (string, bool) {
	m, _ := el.(map[string]any)
	typ, ok := m["type"].(string)
	return typ, ok
}

func unknownBlock(path string, el any, what string) error {
	if typ, ok := blockType(el); ok {
		return turnError(path+".type", "%q is not %s toolrouterd answers", typ, what)
	}
	if _, ok := el.(map[string]any); !ok {
		return turnError(path, "must be a dict (JSON object), got %s", toolrouter.JSONKind(el))
	}
	return turnError(path, "is not %s toolrouterd answers", what)
}

func turnError(field, format string, args ...any) *toolrouter.Error {
	return toolrouter.Invalid(field, field+": "+format, args...)
}
