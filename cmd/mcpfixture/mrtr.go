//lint:file-ignore SA1019 the conformance suite's input-required scenarios ask for sampling and roots, deprecated by 2026-07-28 (SEP-2577) but still part of it

package main

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The conformance suite's multi round-trip tools (protocol 2026-07-28,
// scenarios input-required-result-*): each answers input_required until
// the retry carries the input it asked for. Their requestState is
// HMAC-protected, as the revision asks of servers, so a state that
// toolrouterd (or anyone) changed on the way is refused.

// stateKey signs this process's requestStates.
var stateKey = func() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}()

func signState(payload string) string {
	m := hmac.New(sha256.New, stateKey)
	m.Write([]byte(payload))
	return payload + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// verifyState returns the payload of a state signState made, or an
// invalid-params error.
func verifyState(state string) (string, error) {
	i := strings.LastIndexByte(state, '.')
	if i < 0 || !hmac.Equal([]byte(signState(state[:i])), []byte(state)) {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid requestState: integrity check failed"}
	}
	return state[:i], nil
}

func schemaOf(props ...string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"type": "object", "properties": func() map[string]any {
		m := map[string]any{}
		for i := 0; i < len(props); i += 2 {
			m[props[i]] = map[string]any{"type": props[i+1]}
		}
		return m
	}(), "required": []string{props[0]}})
	return b
}

func elicit(msg string, props ...string) *mcp.ElicitParams {
	return &mcp.ElicitParams{Mode: "form", Message: msg, RequestedSchema: schemaOf(props...)}
}

func sample(prompt string) *mcp.CreateMessageParams {
	return &mcp.CreateMessageParams{MaxTokens: 100,
		Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: prompt}}}}
}

// accepted is the content of an accepted elicitation answer under key.
func accepted(r mcp.InputResponseMap, key string) map[string]any {
	if e, ok := r[key].(*mcp.ElicitResult); ok && e.Action == "accept" {
		return e.Content
	}
	return nil
}

// sampled is the text of a sampling answer under key.
func sampled(r mcp.InputResponseMap, key string) (string, bool) {
	s, ok := r[key].(*mcp.CreateMessageWithToolsResult)
	if !ok {
		return "", false
	}
	for _, c := range s.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			return t.Text, true
		}
	}
	return "(non-text response)", true
}

func text(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

func addMRTRTools(add func(name, desc string, input json.RawMessage, h handler)) {
	add("test_input_required_result_elicitation", "Asks for the caller's name (elicitation), then greets.", noArgs,
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if name, _ := accepted(req.Params.InputResponses, "user_name")["name"].(string); name != "" {
				return text("Hello, %s!", name), nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"user_name": elicit("What is your name?", "name", "string")}}, nil
		})
	add("test_input_required_result_sampling", "Asks for an LLM completion (sampling).", noArgs,
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if t, ok := sampled(req.Params.InputResponses, "capital_question"); ok {
				return text("Sampling response: %s", t), nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"capital_question": sample("What is the capital of France?")}}, nil
		})
	add("test_input_required_result_list_roots", "Asks for the client's roots.", noArgs,
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if r, ok := req.Params.InputResponses["client_roots"].(*mcp.ListRootsResult); ok {
				var uris []string
				for _, root := range r.Roots {
					uris = append(uris, root.URI)
				}
				return text("Client exposed %d root(s): %s", len(r.Roots), strings.Join(uris, ", ")), nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"client_roots": &mcp.ListRootsParams{}}}, nil
		})
	confirm := func(tool string) handler {
		return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Params.RequestState != "" {
				if _, err := verifyState(req.Params.RequestState); err != nil {
					return nil, err
				}
				if accepted(req.Params.InputResponses, "confirm") != nil {
					return text("state-ok: requestState received and confirmation accepted"), nil
				}
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"confirm": elicit("Please confirm", "ok", "boolean")},
				RequestState: signState(tool)}, nil
		}
	}
	add("test_input_required_result_request_state", "Asks for a confirmation with a requestState.", noArgs, confirm("request_state"))
	add("test_input_required_result_tampered_state", "Refuses a requestState that was changed.", noArgs, confirm("tampered_state"))
	add("test_input_required_result_multiple_inputs", "Asks for elicitation, sampling and roots at once.", noArgs,
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			r := req.Params.InputResponses
			name, _ := accepted(r, "user_name")["name"].(string)
			greeting, sampledOK := sampled(r, "greeting")
			roots, rootsOK := r["client_roots"].(*mcp.ListRootsResult)
			if name != "" && sampledOK && rootsOK {
				return text("%s %s - %d root(s) visible", greeting, name, len(roots.Roots)), nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
				"user_name":    elicit("What is your name?", "name", "string"),
				"greeting":     sample("Generate a greeting"),
				"client_roots": &mcp.ListRootsParams{},
			}, RequestState: signState("multiple_inputs")}, nil
		})
	add("test_input_required_result_multi_round", "Two elicitation rounds, the state carrying the first answer.", noArgs,
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Params.RequestState == "" {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"step1": elicit("Step 1: What is your name?", "name", "string")},
					RequestState: signState("round=1")}, nil
			}
			state, err := verifyState(req.Params.RequestState)
			if err != nil {
				return nil, err
			}
			if state == "round=1" {
				name, _ := accepted(req.Params.InputResponses, "step1")["name"].(string)
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"step2": elicit("Step 2: What is your favorite color?", "color", "string")},
					RequestState: signState("round=2;name=" + name)}, nil
			}
			color, _ := accepted(req.Params.InputResponses, "step2")["color"].(string)
			return text("Multi-round complete: %s likes %s", strings.TrimPrefix(state, "round=2;name="), color), nil
		})
	add("test_input_required_result_capabilities", "Asks only for the input the client declared it can give.", noArgs,
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if len(req.Params.InputResponses) > 0 {
				return text("Capability-aware input requests fulfilled"), nil
			}
			caps := req.ClientCapabilities()
			reqs := mcp.InputRequestMap{}
			if caps != nil && caps.Elicitation != nil {
				reqs["user_name"] = elicit("What is your name?", "name", "string")
			}
			if caps != nil && caps.Sampling != nil {
				reqs["greeting"] = sample("Generate a short greeting")
			}
			if caps != nil && caps.RootsV2 != nil {
				reqs["client_roots"] = &mcp.ListRootsParams{}
			}
			if len(reqs) == 0 {
				return text("No declared client capability supports an in-band input request"), nil
			}
			return &mcp.CallToolResult{InputRequests: reqs}, nil
		})
}
