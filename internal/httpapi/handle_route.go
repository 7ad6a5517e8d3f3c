package httpapi

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/toolrouterd/toolrouterd/internal/format"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// maxBatchCalls is the most tool calls one batch routes (api/openapi.yaml,
// BatchRequest: tool_calls maxItems, and the calls of a message).
const maxBatchCalls = toolrouter.MaxBatchCalls

// invalid is the 400 of the problems a request body's Valid found (each
// problem's text names its own field), nil when there are none. The body
// itself is taken from the one the request checker decoded and checked
// against the spec (so no second JSON decoding), by its from method.
func invalid(problems map[string]string) error {
	if len(problems) == 0 {
		return nil
	}
	fields := make([]string, 0, len(problems))
	for f := range problems {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	details := make([]string, len(fields))
	for i, f := range fields {
		details[i] = problems[f]
	}
	return toolrouter.Invalid(fields[0], "%s", strings.Join(details, "; "))
}

// payload is a JSON value of a request kept as decoded (map[string]any,
// []any, string, float64, bool, nil): tool calls and messages in any
// provider's shape.
type payload struct{ v any }

// routeRequest is the body of POST /route.
type routeRequest struct {
	PlanID           string         `json:"plan_id"`
	ToolCall         payload        `json:"tool_call"`
	ProviderMetadata map[string]any `json:"provider_metadata"`
}

// from takes the fields of the checked body (api/openapi.yaml,
// RouteRequest: the types are checked, unknown keys refused).
func (q *routeRequest) from(b map[string]any) {
	q.PlanID, _ = b["plan_id"].(string)
	q.ToolCall.v = b["tool_call"]
	q.ProviderMetadata, _ = b["provider_metadata"].(map[string]any)
}

// Valid checks what the spec cannot say: a whole assistant turn is not one
// tool call, and answering it as a parse failure would burn a sequence.
// It allocates nothing for a valid request.
func (q *routeRequest) Valid(context.Context) map[string]string {
	var p map[string]string
	add := func(k, v string) {
		if p == nil {
			p = map[string]string{}
		}
		p[k] = v
	}
	if q.PlanID == "" {
		add("plan_id", "plan_id: must be a non-empty string")
	}
	if _, ok := q.ToolCall.v.(map[string]any); !ok {
		add("tool_call", "tool_call: payload must be a dict (JSON object), got "+toolrouter.JSONKind(q.ToolCall.v))
	} else if format.IsTurn(q.ToolCall.v) {
		add("tool_call", `tool_call: this is a whole assistant message (or provider response), not one tool call: send it as "message" to POST /route/batch, which routes each of its tool calls and answers with the messages to append`)
	}
	return p
}

// batchRequest is the body of POST /route/batch: tool_calls, or a whole
// assistant turn as message.
type batchRequest struct {
	PlanID           string         `json:"plan_id"`
	ToolCalls        []payload      `json:"tool_calls"`
	Message          payload        `json:"message"`
	ProviderMetadata map[string]any `json:"provider_metadata"`
}

// from takes the fields of the checked body (api/openapi.yaml,
// BatchRequest); a null is as good as absent.
func (q *batchRequest) from(b map[string]any) {
	q.PlanID, _ = b["plan_id"].(string)
	if calls, ok := b["tool_calls"].([]any); ok {
		q.ToolCalls = make([]payload, len(calls))
		for i, c := range calls {
			q.ToolCalls[i].v = c
		}
	}
	q.Message.v = b["message"]
	q.ProviderMetadata, _ = b["provider_metadata"].(map[string]any)
}

func (q *batchRequest) Valid(context.Context) map[string]string {
	p := map[string]string{}
	if q.PlanID == "" {
		p["plan_id"] = "plan_id: must be a non-empty string"
	}
	switch {
	case q.ToolCalls != nil && q.Message.v != nil:
		p["message"] = "tool_calls, message: send exactly one of them, not both"
	case q.ToolCalls == nil && q.Message.v == nil:
		p["message"] = "tool_calls, message: one of them is required (tool_calls: a list of tool calls; message: a whole assistant turn)"
	case len(q.ToolCalls) > maxBatchCalls:
		p["tool_calls"] = "tool_calls: at most 1024 calls per batch"
	}
	return p
}

// batchResponse is the answer of POST /route/batch. Messages, only for a
// message, are the messages that answer its tool calls in its provider's
// shape (format.Turn.Messages).
type batchResponse struct {
	Results []*toolrouter.Result `json:"results"`
	// An interface so that a message without calls still gets
	// "messages": [] (omitempty leaves out only a nil interface).
	Messages any `json:"messages,omitempty"`
}

func handleRoute(rt Router, ap Approvals) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req routeRequest // not through a generic helper, which would put it on the heap
		if st := stateOf(r); st != nil && st.typed {
			// Read typed by the checker: valid, and normalized.
			req.PlanID, req.ProviderMetadata = st.route.planID, st.route.meta
			req.ToolCall.v = &st.route.call
		} else {
			req.from(body(r))
			if err := invalid(req.Valid(r.Context())); err != nil {
				writeError(w, r, err)
				return
			}
		}
		if wantsEventStream(r) {
			streamRoute(w, r, rt, ap, req)
			return
		}
		res, err := rt.Route(r.Context(), req.PlanID, req.ToolCall.v, req.ProviderMetadata)
		if err != nil {
			writeError(w, r, err)
			return
		}
		status := http.StatusOK
		if res.Status == toolrouter.ResultAwaitingApproval {
			// README "Approvals": accepted, not done; the approval and
			// the result to poll are named.
			w.Header().Set("Location", "/approvals/"+res.ApprovalID)
			status = http.StatusAccepted
		}
		encode(w, r, status, res)
	}
}

// streamRoute answers a route as Server-Sent Events: update events in the
// router's order, then one result event. The stream starts with the first
// update; updates may come from other goroutines (progress notifications),
// and one arriving after the route returned is dropped.
func streamRoute(w http.ResponseWriter, r *http.Request, rt Router, ap Approvals, req routeRequest) {
	var (
		mu       sync.Mutex
		s        *sse
		finished bool
	)
	res, err := rt.Stream(r.Context(), req.PlanID, req.ToolCall.v, req.ProviderMetadata, func(u toolrouter.Update) {
		mu.Lock()
		if finished {
			mu.Unlock()
			return
		}
		if s == nil {
			s = startSSE(w, r)
		}
		st := s
		mu.Unlock()
		st.send("update", u)
	})
	mu.Lock()
	finished = true
	mu.Unlock()
	if err != nil {
		if s == nil { // nothing sent yet: a plain problem response
			writeError(w, r, err)
			return
		}
		s.send("error", problem{Type: "about:blank", Title: "Error", Status: statusOf(toolrouter.ErrorCode(err)), Detail: toolrouter.ErrorMessage(err)})
		s.close()
		return
	}
	if s == nil {
		s = startSSE(w, r)
	}
	if res.Status == toolrouter.ResultAwaitingApproval && ap != nil {
		// The stream stays open until the decision, on any replica, then
		// continues as a route does: the terminal update, the result.
		final := awaitDecision(r.Context(), ap, res.ToolCallID)
		if final == nil { // the client left
			s.close()
			return
		}
		u := toolrouter.Update{ToolCallID: final.ToolCallID, Status: toolrouter.StatusComplete, ToolName: final.ToolName}
		if !final.Success {
			u.Status, u.Message = toolrouter.StatusError, *final.Error
		}
		s.send("update", u)
		res = final
	}
	s.send("result", res)
	s.close()
}

func handleBatch(rt Router) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req batchRequest // not through a generic helper, which would put it on the heap
		req.from(body(r))
		err := invalid(req.Valid(r.Context()))
		if err != nil {
			writeError(w, r, err)
			return
		}
		var calls []any
		if req.ToolCalls != nil {
			calls = make([]any, len(req.ToolCalls))
			for i, c := range req.ToolCalls {
				calls[i] = c.v
			}
		}
		var turn *format.Turn
		if req.Message.v != nil {
			// The whole turn is checked before any call is routed, so a
			// turn refused burns no sequence.
			if turn, err = format.SplitTurn(req.Message.v); err != nil {
				writeError(w, r, err)
				return
			}
			if len(turn.Calls) > maxBatchCalls {
				writeError(w, r, toolrouter.Invalid("message", "message: %d tool calls; at most 1024 per batch", len(turn.Calls)))
				return
			}
			calls = turn.Calls
		}
		results, err := rt.Batch(r.Context(), req.PlanID, calls, req.ProviderMetadata)
		if err != nil {
			writeError(w, r, err)
			return
		}
		if results == nil {
			results = []*toolrouter.Result{}
		}
		resp := batchResponse{Results: results}
		if turn != nil {
			resp.Messages = turn.Messages(results)
		}
		encode(w, r, http.StatusOK, resp)
	}
}
