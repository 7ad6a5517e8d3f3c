package httpapi

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/format"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
	"github.com/toolrouterd/toolrouterd/internal/vserver"
)

// maxBatchCalls is the most tool calls one batch routes (api/openapi.yaml,
// BatchRequest: tool_calls maxItems, and the calls of a message).
const maxBatchCalls = toolrouter.MaxBatchCalls

// invalid is the 400 of the problems a request body's Valid found (each
// problem's text names its own field), nil when there are none.
func invalid(problems map[string]string) error {
	if len(problems) == 0 {
		return nil
	}
	fields := slices.Sorted(maps.Keys(problems))
	details := make([]string, len(fields))
	for i, f := range fields {
		details[i] = problems[f]
	}
	return toolrouter.Invalid(fields[0], "%s", strings.Join(details, "; "))
}

// routeRequest is the body of POST /route (api/openapi.yaml, RouteRequest,
// which the request checker enforced). The tool call is kept as decoded: its
// shape is the provider's, which the router recognises.
type routeRequest struct {
	PlanID           string         `json:"plan_id"`
	ToolCall         map[string]any `json:"tool_call"`
	ProviderMetadata map[string]any `json:"provider_metadata"`
}

// Valid checks what the spec cannot say: a whole assistant turn is not one
// tool call, and answering it as a parse failure would burn a sequence.
func (q *routeRequest) Valid(context.Context) map[string]string {
	if format.IsTurn(q.ToolCall) {
		return map[string]string{"tool_call": `tool_call: this is a whole assistant message (or provider response), not one tool call: send it as "message" to POST /route/batch, which routes each of its tool calls and answers with the messages to append`}
	}
	return nil
}

// routeBody is the body of r, a POST /route, as the request checker
// decoded and checked it (once per request, issue 37).
func routeBody(r *http.Request) *routeRequest {
	if st := stateOf(r); st != nil {
		return &st.route
	}
	return &routeRequest{}
}

// batchBody is routeBody for POST /route/batch.
func batchBody(r *http.Request) *batchRequest {
	if st := stateOf(r); st != nil {
		return &st.batch
	}
	return &batchRequest{}
}

func (q *routeRequest) field(name string) any {
	switch name {
	case "plan_id":
		return &q.PlanID
	case "tool_call":
		return &q.ToolCall
	case "provider_metadata":
		return &q.ProviderMetadata
	}
	return nil
}

func (q *routeRequest) reset() { *q = routeRequest{} }

func (q *batchRequest) field(name string) any {
	switch name {
	case "plan_id":
		return &q.PlanID
	case "tool_calls":
		return &q.ToolCalls
	case "message":
		return &q.Message
	case "provider_metadata":
		return &q.ProviderMetadata
	}
	return nil
}

func (q *batchRequest) reset() { *q = batchRequest{} }

// batchRequest is the body of POST /route/batch (api/openapi.yaml,
// BatchRequest): tool_calls, or a whole assistant turn as message, each
// kept as decoded.
type batchRequest struct {
	PlanID           string         `json:"plan_id"`
	ToolCalls        []any          `json:"tool_calls"`
	Message          any            `json:"message"`
	ProviderMetadata map[string]any `json:"provider_metadata"`
}

// Valid checks what the spec cannot say: exactly one of tool_calls and
// message.
func (q *batchRequest) Valid(context.Context) map[string]string {
	switch {
	case q.ToolCalls != nil && q.Message != nil:
		return map[string]string{"message": "tool_calls, message: send exactly one of them, not both"}
	case q.ToolCalls == nil && q.Message == nil:
		return map[string]string{"message": "tool_calls, message: one of them is required (tool_calls: a list of tool calls; message: a whole assistant turn)"}
	}
	return nil
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

// callRequest is the call of payload, normalised (Unreadable set when it
// cannot be), for a plan, in view.
func callRequest(view toolrouter.View, planID, entry string, payload any, meta map[string]any) *toolrouter.CallRequest {
	call, err := format.Normalize(payload)
	return &toolrouter.CallRequest{PlanID: planID, Call: call, Unreadable: err, Meta: meta, View: view, Entry: entry}
}

func handleRoute(rt Router, ap Approvals, views func() *vserver.Set, tasks Tasks, tools func() Tools) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req := routeBody(r)
		if err := invalid(req.Valid(r.Context())); err != nil {
			writeError(w, r, err)
			return
		}
		if err := toolrouter.CheckPlanID(req.PlanID); err != nil {
			writeError(w, r, err)
			return
		}
		cr := callRequest(callView(views, r), req.PlanID, toolrouter.EntryRoute, req.ToolCall, req.ProviderMetadata)
		if wantsEventStream(r) {
			streamRoute(w, r, rt, ap, cr)
			return
		}
		if routeTask(w, r, tasks, tools(), cr) {
			return
		}
		res, err := rt.Do(r.Context(), cr)
		if err != nil {
			writeError(w, r, err)
			return
		}
		status := http.StatusOK
		if budgetRefused(res) {
			// docs/costs.md "Spend limits": refused before it ran; retry
			// once the limit's period ends.
			w.Header().Set("Retry-After", strconv.FormatInt(max(1, int64(math.Ceil(time.Until(res.RetryAfter).Seconds()))), 10))
			status = http.StatusTooManyRequests
		}
		if res.Status == toolrouter.ResultAwaitingApproval {
			// docs/approvals.md "Approvals": accepted, not done; the approval and
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
func streamRoute(w http.ResponseWriter, r *http.Request, rt Router, ap Approvals, req *toolrouter.CallRequest) {
	var (
		mu       sync.Mutex
		s        *sse
		finished bool
	)
	req.Emit = func(u toolrouter.Update) {
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
	}
	res, err := rt.Do(r.Context(), req)
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

func handleBatch(rt Router, views func() *vserver.Set) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req := batchBody(r)
		if err := invalid(req.Valid(r.Context())); err != nil {
			writeError(w, r, err)
			return
		}
		calls := req.ToolCalls
		var turn *format.Turn
		if req.Message != nil {
			// The whole turn is checked before any call is routed, so a
			// turn refused burns no sequence.
			var err error
			if turn, err = format.SplitTurn(req.Message); err != nil {
				writeError(w, r, err)
				return
			}
			if len(turn.Calls) > maxBatchCalls {
				writeError(w, r, toolrouter.Invalid("message", "message: %d tool calls; at most 1024 per batch", len(turn.Calls)))
				return
			}
			calls = turn.Calls
		}
		if err := toolrouter.CheckPlanID(req.PlanID); err != nil {
			writeError(w, r, err)
			return
		}
		if calls == nil {
			writeError(w, r, toolrouter.Invalid("tool_calls", "tool_calls must be a list"))
			return
		}
		reqs := make([]*toolrouter.CallRequest, len(calls))
		view := callView(views, r)
		for i, p := range calls {
			if _, ok := p.(map[string]any); !ok {
				writeError(w, r, toolrouter.Invalid(fmt.Sprintf("tool_calls[%d]", i), "tool_calls[%d]: payload must be a dict (JSON object), got %s", i, toolrouter.JSONKind(p)))
				return
			}
			reqs[i] = callRequest(view, req.PlanID, toolrouter.EntryRouteBatch, p, req.ProviderMetadata)
		}
		results, err := rt.Batch(r.Context(), req.PlanID, reqs)
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

// budgetRefused reports a result refused by a spend limit.
func budgetRefused(res *toolrouter.Result) bool {
	return res.ErrorCategory != nil && *res.ErrorCategory == toolrouter.CategoryBudget && !res.RetryAfter.IsZero()
}
