package outbound

import (
	"bytes"
	"encoding/json"
	"strings"
)

// ErrorMessage is the message of a JSON error body: its `error` when a
// string (Ollama, many tools), else the `message` of its `error` object
// (OpenAI, Anthropic, llama.cpp), else its `message` (vLLM); "" when none
// of these is a non-blank string.
func ErrorMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
	}
	if json.Unmarshal(bytes.TrimSpace(body), &v) != nil {
		return ""
	}
	if s := JSONString(v.Error); s != "" {
		return s
	}
	var inner struct {
		Message json.RawMessage `json:"message"`
	}
	if json.Unmarshal(v.Error, &inner) == nil {
		if s := JSONString(inner.Message); s != "" {
			return s
		}
	}
	return JSONString(v.Message)
}

// JSONString is the trimmed value of a JSON string, "" for anything else.
func JSONString(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return strings.TrimSpace(s)
}
