package llmtest

import (
	"encoding/json"
	"fmt"
	"math"
	"mime"
	"net/http"
	"regexp"
	"strings"
)

const anthropicMessagesPath = "/v1/messages"

// anthropicToolName is the documented rule for client tool names.
var anthropicToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// anthropicVersions are the values the anthropic-version header takes.
var anthropicVersions = map[string]bool{"2023-06-01": true, "2023-01-01": true}

// Top-level request fields the Messages API knows; any other is "Extra
// inputs are not permitted".
var anthropicFields = setOf("model", "messages", "max_tokens", "system", "metadata", "stop_sequences", "stream",
	"temperature", "top_k", "top_p", "tools", "tool_choice", "thinking", "service_tier", "container",
	"mcp_servers", "context_management", "output_config", "output_format", "inference_geo")

// Fields of each content block type the fake knows.
var anthropicBlockFields = map[string]map[string]bool{
	"text":              setOf("type", "text", "cache_control", "citations"),
	"image":             setOf("type", "source", "cache_control"),
	"document":          setOf("type", "source", "cache_control", "citations", "context", "title"),
	"tool_use":          setOf("type", "id", "name", "input", "cache_control", "caller"),
	"tool_result":       setOf("type", "tool_use_id", "content", "is_error", "cache_control"),
	"thinking":          setOf("type", "thinking", "signature"),
	"redacted_thinking": setOf("type", "data"),
	"search_result":     setOf("type", "source", "title", "content", "cache_control", "citations"),
}

// Fields of a custom (client) tool definition.
var anthropicToolFields = setOf("type", "name", "description", "input_schema", "cache_control", "strict", "input_examples", "defer_loading", "allowed_callers")

func setOf(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

func anthropicErrorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

func writeAnthropicError(w http.ResponseWriter, status int, typ, msg, retryAfter string) {
	reqID := anthropicRequestID()
	w.Header().Set("request-id", reqID)
	if retryAfter != "" {
		w.Header().Set("retry-after", retryAfter)
	}
	writeJSON(w, status, map[string]any{
		"type":       "error",
		"error":      map[string]any{"type": typ, "message": msg},
		"request_id": reqID,
	})
}

func (s *Server) anthropicReject(w http.ResponseWriter, status int, msg string) {
	s.addRejection(status, msg)
	writeAnthropicError(w, status, anthropicErrorType(status), msg, "")
}

func (s *Server) serveAnthropic(w http.ResponseWriter, r *http.Request, rec Recorded) {
	if r.URL.Path != anthropicMessagesPath {
		s.anthropicReject(w, http.StatusNotFound, "Not Found")
		return
	}
	if r.Method != http.MethodPost {
		s.anthropicReject(w, http.StatusMethodNotAllowed, "Method Not Allowed")
		return
	}
	if key := s.cfg.apiKey; key != "" {
		got := r.Header.Get("x-api-key")
		switch {
		case got == "":
			s.anthropicReject(w, http.StatusUnauthorized, "x-api-key header is required")
			return
		case got != key:
			s.anthropicReject(w, http.StatusUnauthorized, "invalid x-api-key")
			return
		}
	}
	version := r.Header.Get("anthropic-version")
	switch {
	case version == "":
		s.anthropicReject(w, http.StatusBadRequest, "anthropic-version: header is required")
		return
	case !anthropicVersions[version]:
		s.anthropicReject(w, http.StatusBadRequest, fmt.Sprintf("anthropic-version: %q is not a valid version", version))
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		s.anthropicReject(w, http.StatusBadRequest, "content-type: must be application/json")
		return
	}
	if rec.Body == nil {
		s.anthropicReject(w, http.StatusBadRequest, "There was an error parsing the body of your request. Please make sure it is valid JSON.")
		return
	}
	if msg := anthropicCheckRequest(rec.Body); msg != "" {
		s.anthropicReject(w, http.StatusBadRequest, msg)
		return
	}
	model := rec.Body["model"].(string)
	if s.cfg.model != "" && model != s.cfg.model {
		s.anthropicReject(w, http.StatusNotFound, "model: "+model)
		return
	}

	turn := s.nextTurn(rec)
	if turn.Status != 0 {
		writeAnthropicError(w, turn.Status, anthropicErrorType(turn.Status), anthropicStatusMessage(turn), turn.RetryAfter)
		return
	}
	msg := s.anthropicMessage(model, turn)
	w.Header().Set("request-id", anthropicRequestID())
	if stream, _ := rec.Body["stream"].(bool); stream {
		writeAnthropicStream(w, msg)
		return
	}
	writeJSON(w, http.StatusOK, msg)
}

func anthropicStatusMessage(t Turn) string {
	if t.ErrorMessage != "" {
		return t.ErrorMessage
	}
	switch t.Status {
	case http.StatusTooManyRequests:
		return "This request would exceed the rate limit for your organization of 50 requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later. You may also contact sales at https://www.anthropic.com/contact-sales to discuss your options for a rate limit increase."
	case 529:
		return "Overloaded"
	case http.StatusInternalServerError:
		return "Internal server error"
	case http.StatusUnauthorized:
		return "invalid x-api-key"
	}
	return http.StatusText(t.Status)
}

// anthropicCheckRequest applies the Messages API's checks of the body and
// returns the message of the first failure ("" when the request is valid).
func anthropicCheckRequest(body map[string]any) string {
	for _, k := range sortedKeys(body) {
		if !anthropicFields[k] {
			return k + ": Extra inputs are not permitted"
		}
	}
	for _, f := range []string{"max_tokens", "messages", "model"} {
		if _, ok := body[f]; !ok {
			return f + ": Field required"
		}
	}
	if _, ok := body["model"].(string); !ok {
		return "model: Input should be a valid string"
	}
	mt, ok := body["max_tokens"].(float64)
	switch {
	case !ok || mt != math.Trunc(mt):
		return "max_tokens: Input should be a valid integer"
	case mt < 1:
		return "max_tokens: Input should be greater than or equal to 1"
	}
	if sys, ok := body["system"]; ok {
		switch sys.(type) {
		case string, []any:
		default:
			return "system: Input should be a valid string"
		}
	}

	// Tools.
	tools, hasTools := body["tools"].([]any)
	if _, present := body["tools"]; present && !hasTools {
		return "tools: Input should be a valid list"
	}
	for i, t := range tools {
		tm, ok := t.(map[string]any)
		if !ok {
			return fmt.Sprintf("tools.%d: Input should be a valid dictionary", i)
		}
		typ, _ := tm["type"].(string)
		if typ != "" && typ != "custom" {
			continue // a server tool (web_search_20250305, …)
		}
		at := fmt.Sprintf("tools.%d.custom", i)
		for _, k := range sortedKeys(tm) {
			if !anthropicToolFields[k] {
				return at + "." + k + ": Extra inputs are not permitted"
			}
		}
		name, ok := tm["name"].(string)
		if !ok {
			return at + ".name: Field required"
		}
		if !anthropicToolName.MatchString(name) {
			return at + ".name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'"
		}
		schema, ok := tm["input_schema"]
		if !ok {
			return at + ".input_schema: Field required"
		}
		sm, ok := schema.(map[string]any)
		if !ok {
			return at + ".input_schema: Input should be a valid dictionary"
		}
		if st, _ := sm["type"].(string); st != "object" {
			return at + ".input_schema.type: Input should be 'object'"
		}
	}

	// Messages.
	msgs, ok := body["messages"].([]any)
	if !ok {
		return "messages: Input should be a valid list"
	}
	if len(msgs) == 0 {
		return "messages: at least one message is required"
	}
	type parsed struct {
		role   string
		blocks []map[string]any // content as blocks (a string is one text block)
		str    bool
	}
	ms := make([]parsed, len(msgs))
	usesTools := false
	for i, m := range msgs {
		mm, ok := m.(map[string]any)
		if !ok {
			return fmt.Sprintf("messages.%d: Input should be a valid dictionary", i)
		}
		for _, k := range sortedKeys(mm) {
			if k != "role" && k != "content" {
				return fmt.Sprintf("messages.%d.%s: Extra inputs are not permitted", i, k)
			}
		}
		role, ok := mm["role"].(string)
		if !ok {
			return fmt.Sprintf("messages.%d.role: Field required", i)
		}
		switch role {
		case "user", "assistant":
		case "system":
			return `messages: Unexpected role "system". The Messages API accepts a top-level ` + "`system`" + ` parameter, not "system" as an input message role.`
		default:
			return fmt.Sprintf(`messages: Unexpected role %q. Allowed roles are "user" or "assistant"`, role)
		}
		content, ok := mm["content"]
		if !ok {
			return fmt.Sprintf("messages.%d.content: Field required", i)
		}
		p := parsed{role: role}
		switch c := content.(type) {
		case string:
			p.str = true
			p.blocks = []map[string]any{{"type": "text", "text": c}}
		case []any:
			for j, b := range c {
				bm, ok := b.(map[string]any)
				if !ok {
					return fmt.Sprintf("messages.%d.content.%d: Input should be a valid dictionary", i, j)
				}
				p.blocks = append(p.blocks, bm)
			}
		default:
			return fmt.Sprintf("messages.%d.content: Input should be a valid string", i)
		}
		ms[i] = p
	}
	if ms[0].role != "user" {
		return `messages: first message must use the "user" role`
	}
	for i, p := range ms {
		last := i == len(ms)-1
		if len(p.blocks) == 0 || (p.str && p.blocks[0]["text"] == "") {
			if !(last && p.role == "assistant") {
				return fmt.Sprintf("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
			}
			continue
		}
		for j, b := range p.blocks {
			at := fmt.Sprintf("messages.%d.content.%d", i, j)
			typ, ok := b["type"].(string)
			if !ok {
				return at + ".type: Field required"
			}
			fields, known := anthropicBlockFields[typ]
			if !known {
				continue // newer block types pass unchecked
			}
			for _, k := range sortedKeys(b) {
				if !fields[k] {
					return at + "." + typ + "." + k + ": Extra inputs are not permitted"
				}
			}
			switch typ {
			case "text":
				text, ok := b["text"].(string)
				switch {
				case !ok:
					return at + ".text.text: Field required"
				case text == "":
					if !p.str {
						return "messages: text content blocks must be non-empty"
					}
				case strings.TrimSpace(text) == "" && !(last && p.role == "assistant"):
					return "messages: text content blocks must contain non-whitespace text"
				}
			case "tool_use":
				usesTools = true
				if p.role != "assistant" {
					return at + ": `tool_use` blocks can only be in `assistant` messages"
				}
				if _, ok := b["id"].(string); !ok {
					return at + ".tool_use.id: Field required"
				}
				if _, ok := b["name"].(string); !ok {
					return at + ".tool_use.name: Field required"
				}
				if _, ok := b["input"].(map[string]any); !ok {
					return at + ".tool_use.input: Input should be a valid dictionary"
				}
			case "tool_result":
				usesTools = true
				if p.role != "user" {
					return at + ": `tool_result` blocks can only be in `user` messages"
				}
				if _, ok := b["tool_use_id"].(string); !ok {
					return at + ".tool_result.tool_use_id: Field required"
				}
				switch b["content"].(type) {
				case nil, string, []any:
				default:
					return at + ".tool_result.content: Input should be a valid string"
				}
				if v, ok := b["is_error"]; ok {
					if _, isBool := v.(bool); !isBool {
						return at + ".tool_result.is_error: Input should be a valid boolean"
					}
				}
			}
		}
	}
	if usesTools && len(tools) == 0 {
		return "Requests which include `tool_use` or `tool_result` blocks must define tools."
	}

	// tool_use / tool_result pairing.
	seenIDs := map[string]bool{}
	for i, p := range ms {
		var uses []string
		for j, b := range p.blocks {
			if b["type"] == "tool_use" {
				id := b["id"].(string)
				if seenIDs[id] {
					return fmt.Sprintf("messages.%d.content.%d: `tool_use` ids must be unique", i, j)
				}
				seenIDs[id] = true
				uses = append(uses, id)
			}
		}
		// Results must answer a tool_use of the message just before.
		var prevUses map[string]bool
		if i > 0 && ms[i-1].role == "assistant" {
			prevUses = map[string]bool{}
			for _, b := range ms[i-1].blocks {
				if b["type"] == "tool_use" {
					prevUses[b["id"].(string)] = true
				}
			}
		}
		for j, b := range p.blocks {
			if b["type"] != "tool_result" {
				continue
			}
			id := b["tool_use_id"].(string)
			if !prevUses[id] {
				return fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, id)
			}
		}
		if len(uses) == 0 {
			continue
		}
		// Every tool_use needs its tool_result in the next message, and the
		// results come first in it.
		next := i + 1
		answered := map[string]bool{}
		leading := 0
		if next < len(ms) && ms[next].role == "user" {
			inLead := true
			for _, b := range ms[next].blocks {
				if b["type"] == "tool_result" {
					answered[b["tool_use_id"].(string)] = true
					if inLead {
						leading++
					}
				} else {
					inLead = false
				}
			}
		}
		var missing []string
		for _, id := range uses {
			if !answered[id] {
				missing = append(missing, id)
			}
		}
		at := next
		if at >= len(ms) {
			at = i
		}
		if len(missing) > 0 {
			return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", at, strings.Join(missing, ", "))
		}
		if leading < len(uses) {
			return fmt.Sprintf("messages.%d: Did not find %d `tool_result` block(s) at the beginning of this message. Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks.", at, len(uses))
		}
	}
	return ""
}

// The Messages response in the order of the recorded anthropic_*.json.
type anthropicMsg struct {
	Model        string           `json:"model"`
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Role         string           `json:"role"`
	Content      []map[string]any `json:"content"`
	StopReason   *string          `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	Usage        anthropicUsage   `json:"usage"`
}

type anthropicUsage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	CacheCreation            struct {
		Ephemeral5m int `json:"ephemeral_5m_input_tokens"`
		Ephemeral1h int `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
	OutputTokens int    `json:"output_tokens"`
	ServiceTier  string `json:"service_tier"`
	InferenceGeo string `json:"inference_geo,omitempty"`
}

func (s *Server) anthropicMessage(model string, t Turn) anthropicMsg {
	u := usageOf(t)
	var content []map[string]any
	if t.Text != "" || len(t.ToolCalls) == 0 {
		content = append(content, map[string]any{"type": "text", "text": t.Text})
	}
	stop := "end_turn"
	for _, c := range t.ToolCalls {
		id := c.ID
		if id == "" {
			id = anthropicToolUseID()
		}
		args := c.Arguments
		if args == nil {
			args = map[string]any{}
		}
		content = append(content, map[string]any{"type": "tool_use", "id": id, "name": c.Name, "input": args,
			"caller": map[string]any{"type": "direct"}})
		stop = "tool_use"
	}
	return anthropicMsg{
		Model: model, ID: anthropicMessageID(), Type: "message", Role: "assistant",
		Content: content, StopReason: &stop,
		Usage: anthropicUsage{InputTokens: u.InputTokens - u.CachedInputTokens, CacheReadInputTokens: u.CachedInputTokens, OutputTokens: u.OutputTokens, ServiceTier: "standard", InferenceGeo: "not_available"},
	}
}

// writeAnthropicStream sends msg as the events of
// anthropic_tool_use_stream.txt.
func writeAnthropicStream(w http.ResponseWriter, msg anthropicMsg) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	event := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	start := msg
	start.Content = []map[string]any{}
	start.StopReason = nil
	start.Usage.OutputTokens = 1
	event("message_start", map[string]any{"type": "message_start", "message": start})
	for i, block := range msg.Content {
		switch block["type"] {
		case "text":
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			if i == 0 {
				event("ping", map[string]any{"type": "ping"})
			}
			for _, piece := range splitText(block["text"].(string)) {
				event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "text_delta", "text": piece}})
			}
		case "tool_use":
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": block["id"], "name": block["name"],
					"caller": block["caller"], "input": map[string]any{}}})
			b, _ := json.Marshal(block["input"])
			pieces := append([]string{""}, splitN(string(b), 7)...)
			for _, piece := range pieces {
				event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "input_json_delta", "partial_json": piece}})
			}
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": *msg.StopReason, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": msg.Usage.OutputTokens}})
	event("message_stop", map[string]any{"type": "message_stop"})
}
