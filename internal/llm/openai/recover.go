package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/toolrouterd/toolrouterd/internal/llm"
)

// DecodeArguments reads a tool call's arguments: a JSON string holding an
// object (OpenAI), or an object (Ollama, some compatible servers). Empty,
// null, "" and "null" are {}. A string holding a JSON string holding an
// object (double-encoded, seen from small models) is decoded twice.
// Anything else is an error.
func DecodeArguments(raw json.RawMessage) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{}, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("arguments are not valid JSON: %w", err)
		}
		s = strings.TrimSpace(s)
		if s == "" || s == "null" {
			return map[string]any{}, nil
		}
		if strings.HasPrefix(s, `"`) {
			var inner string
			if json.Unmarshal([]byte(s), &inner) == nil {
				s = strings.TrimSpace(inner)
			}
		}
		raw = []byte(s)
	}
	var v any
	if err := decodeOne(raw, &v); err != nil {
		return nil, fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	switch v := v.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return v, nil
	default:
		return nil, fmt.Errorf("arguments are not a JSON object: %s", shorten(string(raw)))
	}
}

// decodeOne decodes exactly one JSON value from b.
func decodeOne(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}

func shorten(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

const (
	openTag  = "<tool_call>"
	closeTag = "</tool_call>"
)

// RecoverToolCalls finds tool calls a model wrote as text instead of
// tool_calls (llama.cpp and small local models): one or more
// <tool_call>{…}</tool_call> blocks (Hermes/Qwen style; an unclosed last
// block is accepted), or content that is exactly a JSON object
// {"name": …, "arguments"|"parameters": {…}} — or an array of such objects —
// optionally inside a ``` / ```json fence. Only calls naming one of tools
// are recovered; it returns the remaining text and the calls (with fresh
// ids), or content unchanged and nil.
func RecoverToolCalls(content string, tools []llm.Tool) (string, []llm.ToolCall) {
	if len(tools) == 0 || strings.TrimSpace(content) == "" {
		return content, nil
	}
	offered := make(map[string]bool, len(tools))
	for _, t := range tools {
		offered[t.Name] = true
	}
	if strings.Contains(content, openTag) {
		return recoverTagged(content, offered)
	}
	s := stripFence(strings.TrimSpace(content))
	if strings.HasPrefix(s, "[") {
		var items []json.RawMessage
		if decodeOne([]byte(s), &items) != nil || len(items) == 0 {
			return content, nil
		}
		calls := make([]llm.ToolCall, 0, len(items))
		for _, it := range items {
			tc, ok := parseCall(string(it), offered, false)
			if !ok {
				return content, nil
			}
			calls = append(calls, tc)
		}
		return "", calls
	}
	if tc, ok := parseCall(s, offered, false); ok {
		return "", []llm.ToolCall{tc}
	}
	return content, nil
}

// recoverTagged takes the valid <tool_call> blocks out of content; blocks
// that do not parse or name no offered tool stay in the text.
func recoverTagged(content string, offered map[string]bool) (string, []llm.ToolCall) {
	var rest strings.Builder
	var calls []llm.ToolCall
	s := content
	for {
		i := strings.Index(s, openTag)
		if i < 0 {
			rest.WriteString(s)
			break
		}
		after := s[i+len(openTag):]
		inner, next, whole := after, "", s
		if j := strings.Index(after, closeTag); j >= 0 {
			inner, next = after[:j], after[j+len(closeTag):]
			whole = s[:i+len(openTag)+j+len(closeTag)]
		}
		if tc, ok := parseCall(inner, offered, true); ok {
			rest.WriteString(s[:i])
			calls = append(calls, tc)
		} else {
			rest.WriteString(whole)
		}
		if whole == s && next == "" {
			break
		}
		s = next
	}
	if len(calls) == 0 {
		return content, nil
	}
	return strings.TrimSpace(rest.String()), calls
}

// stripFence removes a surrounding ``` or ```json fence.
func stripFence(s string) string {
	if !strings.HasPrefix(s, "```") || !strings.HasSuffix(s, "```") || len(s) < 6 {
		return s
	}
	body := s[3 : len(s)-3]
	if nl := strings.IndexByte(body, '\n'); nl >= 0 {
		lang := strings.TrimSpace(body[:nl])
		if lang == "" || strings.EqualFold(lang, "json") {
			body = body[nl+1:]
		}
	} else if strings.HasPrefix(strings.ToLower(body), "json") {
		body = body[4:]
	}
	return strings.TrimSpace(body)
}

// parseCall reads {"name", "arguments"|"parameters"} naming an offered
// tool. argsOptional: a missing arguments key means {} (inside an explicit
// <tool_call> block only).
func parseCall(s string, offered map[string]bool, argsOptional bool) (llm.ToolCall, bool) {
	s = stripFence(strings.TrimSpace(s))
	if !strings.HasPrefix(s, "{") {
		return llm.ToolCall{}, false
	}
	var obj map[string]json.RawMessage
	if decodeOne([]byte(s), &obj) != nil {
		return llm.ToolCall{}, false
	}
	var name string
	if json.Unmarshal(obj["name"], &name) != nil || !offered[name] {
		return llm.ToolCall{}, false
	}
	raw, ok := obj["arguments"]
	if !ok {
		raw, ok = obj["parameters"]
	}
	if !ok && !argsOptional {
		return llm.ToolCall{}, false
	}
	args, err := DecodeArguments(raw)
	if err != nil {
		return llm.ToolCall{}, false
	}
	return llm.ToolCall{ID: llm.NewCallID(), Name: name, Arguments: args}, true
}
