package llmtest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"google.golang.org/genai"
)

// The Gemini fake (POST /v1beta/models/{model}:generateContent, API key in
// x-goog-api-key). A request body must decode, with unknown fields
// refused, into Google's own types of the official Go SDK
// (google.golang.org/genai: Content, Part, Tool, FunctionDeclaration,
// ToolConfig, GenerationConfig, SafetySetting), then pass the checks the
// API makes beyond them:
//   - contents alternate no further than roles "user" and "model", and
//     every part has exactly one kind of data;
//   - function names match ^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$;
//   - a model turn's function calls are answered, in the next user turn,
//     by as many functionResponse parts, with the calls' names (and their
//     ids, when the calls had ids);
//   - for Gemini 3 models ("gemini-3…") the first functionCall part of a
//     tool-calling turn carries a thoughtSignature, which must come back
//     on that part unchanged (https://ai.google.dev/gemini-api/docs/thought-signatures).

// geminiRequest is the GenerateContentRequest body (the SDK's
// GenerateContentConfig fields sit at top level on the wire).
type geminiRequest struct {
	Contents          []*genai.Content        `json:"contents"`
	Tools             []*genai.Tool           `json:"tools,omitempty"`
	ToolConfig        *genai.ToolConfig       `json:"toolConfig,omitempty"`
	SystemInstruction *genai.Content          `json:"systemInstruction,omitempty"`
	GenerationConfig  *genai.GenerationConfig `json:"generationConfig,omitempty"`
	SafetySettings    []*genai.SafetySetting  `json:"safetySettings,omitempty"`
	CachedContent     string                  `json:"cachedContent,omitempty"`
	Labels            map[string]string       `json:"labels,omitempty"`
}

var geminiFuncName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$`)

// geminiErr is a Google API error body's error.
type geminiErr struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
}

func (s *Server) geminiReject(w http.ResponseWriter, status int, msg string) {
	s.addRejection(status, msg)
	writeGeminiError(w, status, msg, "")
}

func writeGeminiError(w http.ResponseWriter, status int, msg, retryAfter string) {
	code := map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
		429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}[status]
	if code == "" {
		code = "UNKNOWN"
	}
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	writeJSON(w, status, map[string]any{"error": geminiErr{Code: status, Message: msg, Status: code}})
}

func (s *Server) serveGemini(w http.ResponseWriter, r *http.Request, rec Recorded) {
	model, ok := strings.CutPrefix(r.URL.Path, "/v1beta/models/")
	model, ok2 := strings.CutSuffix(model, ":generateContent")
	if !ok || !ok2 || model == "" || strings.Contains(model, "/") {
		s.geminiReject(w, http.StatusNotFound, fmt.Sprintf("The requested URL %s was not found on this server.", r.URL.Path))
		return
	}
	if r.Method != http.MethodPost {
		s.geminiReject(w, http.StatusMethodNotAllowed, "Method Not Allowed")
		return
	}
	if key := s.cfg.apiKey; key != "" {
		switch got := r.Header.Get("x-goog-api-key"); {
		case got == "":
			s.geminiReject(w, http.StatusForbidden, "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.")
			return
		case got != key:
			s.geminiReject(w, http.StatusBadRequest, "API key not valid. Please pass a valid API key.")
			return
		}
	}
	if msg := s.geminiCheckRequest(rec.Raw, model); msg != "" {
		s.geminiReject(w, http.StatusBadRequest, msg)
		return
	}
	if s.cfg.model != "" && model != s.cfg.model {
		s.geminiReject(w, http.StatusNotFound, fmt.Sprintf("models/%s is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.", model))
		return
	}
	turn := s.nextTurn(rec)
	if turn.Status != 0 {
		msg := turn.ErrorMessage
		if msg == "" {
			msg = map[int]string{429: "You exceeded your current quota, please check your plan and billing details.",
				503: "The model is overloaded. Please try again later.", 500: "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"}[turn.Status]
		}
		if msg == "" {
			msg = http.StatusText(turn.Status)
		}
		writeGeminiError(w, turn.Status, msg, turn.RetryAfter)
		return
	}
	writeJSON(w, http.StatusOK, s.geminiResponse(model, turn))
}

// geminiCheckRequest returns the API's error message for a request it
// would refuse, "" for one it takes.
func (s *Server) geminiCheckRequest(raw []byte, model string) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var req geminiRequest
	if err := dec.Decode(&req); err != nil {
		return "Invalid JSON payload received. " + err.Error()
	}
	if len(req.Contents) == 0 {
		return "* GenerateContentRequest.contents: contents is not specified"
	}
	for i, t := range req.Tools {
		for j, fd := range t.FunctionDeclarations {
			if !geminiFuncName.MatchString(fd.Name) {
				return fmt.Sprintf("* GenerateContentRequest.tools[%d].function_declarations[%d].name: Invalid function name. Must start with a letter or an underscore. Must be a-z, A-Z, 0-9, or contain underscores, dots, colons and dashes, with a maximum length of 64.", i, j)
			}
			if p := fd.Parameters; p != nil && strings.EqualFold(string(p.Type), "object") && len(p.Properties) == 0 {
				return fmt.Sprintf("* GenerateContentRequest.tools[%d].function_declarations[%d].parameters.properties: should be non-empty for OBJECT type", i, j)
			}
		}
	}
	var pending []*genai.FunctionCall // calls of the last model turn
	for i, c := range req.Contents {
		if c.Role != "user" && c.Role != "model" {
			return fmt.Sprintf("Please use a valid role: user, model. (contents[%d].role %q)", i, c.Role)
		}
		if len(c.Parts) == 0 {
			return fmt.Sprintf("* GenerateContentRequest.contents[%d].parts: contents.parts must not be empty.", i)
		}
		var calls []*genai.FunctionCall
		var responses []*genai.FunctionResponse
		for j, p := range c.Parts {
			if n := partKinds(p); n != 1 {
				return fmt.Sprintf("* GenerateContentRequest.contents[%d].parts[%d].data: required oneof field 'data' must have one initialized field", i, j)
			}
			if p.FunctionCall != nil {
				if c.Role != "model" {
					return fmt.Sprintf("contents[%d]: a functionCall part must be in a model turn", i)
				}
				if strings.HasPrefix(model, "gemini-3") && len(calls) == 0 {
					if issued := s.geminiSignatures(p.FunctionCall); len(issued) > 0 && !slices.Contains(issued, base64.StdEncoding.EncodeToString(p.ThoughtSignature)) {
						return fmt.Sprintf("Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:%s` , position %d. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.", p.FunctionCall.Name, i+1)
					}
				}
				calls = append(calls, p.FunctionCall)
			}
			if p.FunctionResponse != nil {
				responses = append(responses, p.FunctionResponse)
			}
		}
		if len(pending) > 0 {
			if c.Role != "user" || len(responses) != len(pending) {
				return "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn."
			}
			for k, fr := range responses {
				fc := pending[k]
				if fr.Name != fc.Name || fc.ID != "" && fr.ID != fc.ID {
					return fmt.Sprintf("Please ensure that function response turn comes immediately after a function call turn, answering its calls in order: contents[%d] function response %d (%s %q) does not answer function call %s %q.", i, k, fr.Name, fr.ID, fc.Name, fc.ID)
				}
			}
		} else if len(responses) > 0 {
			return "Please ensure that function response turn comes immediately after a function call turn."
		}
		pending = calls
	}
	if len(pending) > 0 {
		return "Please ensure that function call turn comes immediately after a user turn or after a function response turn."
	}
	return ""
}

// partKinds is how many kinds of data a part holds (the API wants one).
func partKinds(p *genai.Part) int {
	n := 0
	for _, set := range []bool{p.Text != "", p.InlineData != nil, p.FileData != nil, p.FunctionCall != nil,
		p.FunctionResponse != nil, p.ExecutableCode != nil, p.CodeExecutionResult != nil} {
		if set {
			n++
		}
	}
	if n == 0 && p.Thought { // an empty thought part with its signature
		n = 1
	}
	return n
}

func geminiCallKey(fc *genai.FunctionCall) string {
	b, _ := json.Marshal(fc.Args)
	return fc.Name + "\x00" + string(b)
}

// geminiSignatures are the signatures the fake issued with calls like fc
// (the same call may come in several turns, each with its own).
func (s *Server) geminiSignatures(fc *genai.FunctionCall) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.signatures[geminiCallKey(fc)]
}

// geminiResponse is a GenerateContentResponse as the API sends it. A turn
// with FinishReason (e.g. SAFETY) is a candidate stopped for that reason,
// without content.
func (s *Server) geminiResponse(model string, t Turn) map[string]any {
	u := usageOf(t)
	cand := map[string]any{"index": 0, "finishReason": "STOP"}
	var parts []any
	if t.Text != "" || len(t.ToolCalls) == 0 {
		parts = append(parts, map[string]any{"text": t.Text})
	}
	for i, c := range t.ToolCalls {
		args := c.Arguments
		if args == nil {
			args = map[string]any{}
		}
		fc := map[string]any{"name": c.Name, "args": args}
		if c.ID != "" {
			fc["id"] = c.ID
		}
		part := map[string]any{"functionCall": fc}
		if i == 0 && strings.HasPrefix(model, "gemini-3") {
			sig := base64.StdEncoding.EncodeToString([]byte("sig:" + randFrom(alnum, 32)))
			part["thoughtSignature"] = sig
			s.mu.Lock()
			if s.signatures == nil {
				s.signatures = map[string][]string{}
			}
			key := geminiCallKey(&genai.FunctionCall{Name: c.Name, ID: c.ID, Args: args})
			s.signatures[key] = append(s.signatures[key], sig)
			s.mu.Unlock()
		}
		parts = append(parts, part)
	}
	if t.FinishReason != "" {
		cand["finishReason"] = t.FinishReason
		cand["safetyRatings"] = []any{map[string]any{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": true}}
	} else {
		cand["content"] = map[string]any{"role": "model", "parts": parts}
	}
	usage := map[string]any{"promptTokenCount": u.InputTokens, "candidatesTokenCount": u.OutputTokens,
		"totalTokenCount":     u.InputTokens + u.OutputTokens,
		"promptTokensDetails": []any{map[string]any{"modality": "TEXT", "tokenCount": u.InputTokens}}}
	if u.CachedInputTokens > 0 { // the API leaves it out when nothing was cached
		usage["cachedContentTokenCount"] = u.CachedInputTokens
		usage["cacheTokensDetails"] = []any{map[string]any{"modality": "TEXT", "tokenCount": u.CachedInputTokens}}
	}
	return map[string]any{
		"candidates":    []any{cand},
		"usageMetadata": usage,
		"modelVersion":  model,
		"responseId":    randFrom(alnum, 22),
	}
}
