package httpapi

import (
	"net/http"
	"sync"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// routeRequest is the body of POST /route and POST /route/batch, taken from
// the value the request checker decoded.
type routeRequest struct {
	PlanID   string
	Call     any
	Calls    []any
	Metadata map[string]any
}

func readRouteRequest(r *http.Request, batch bool) (routeRequest, error) {
	b := body(r)
	var req routeRequest
	req.PlanID, _ = b["plan_id"].(string)
	if req.PlanID == "" {
		return req, toolrouter.Invalid("plan_id", "plan_id: must be a non-empty string")
	}
	if m, ok := b["provider_metadata"]; ok && m != nil {
		md, ok := m.(map[string]any)
		if !ok {
			return req, toolrouter.Invalid("provider_metadata", "provider_metadata: payload must be a dict (JSON object)")
		}
		req.Metadata = md
	}
	if batch {
		calls, ok := b["tool_calls"].([]any)
		if !ok {
			return req, toolrouter.Invalid("tool_calls", "tool_calls: must be a list (JSON array)")
		}
		req.Calls = calls
		return req, nil
	}
	req.Call = b["tool_call"]
	return req, nil
}

func handleRoute(rt Router) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, err := readRouteRequest(r, false)
		if err != nil {
			writeError(w, r, err)
			return
		}
		if wantsEventStream(r) {
			streamRoute(w, r, rt, req)
			return
		}
		res, err := rt.Route(r.Context(), req.PlanID, req.Call, req.Metadata)
		if err != nil {
			writeError(w, r, err)
			return
		}
		encode(w, r, http.StatusOK, res)
	}
}

// streamRoute answers a route as Server-Sent Events: update events in the
// router's order, then one result event. The stream starts with the first
// update; updates may come from other goroutines (progress notifications),
// and one arriving after the route returned is dropped.
func streamRoute(w http.ResponseWriter, r *http.Request, rt Router, req routeRequest) {
	var (
		mu       sync.Mutex
		s        *sse
		finished bool
	)
	res, err := rt.Stream(r.Context(), req.PlanID, req.Call, req.Metadata, func(u toolrouter.Update) {
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
	s.send("result", res)
	s.close()
}

func handleBatch(rt Router) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, err := readRouteRequest(r, true)
		if err != nil {
			writeError(w, r, err)
			return
		}
		results, err := rt.Batch(r.Context(), req.PlanID, req.Calls, req.Metadata)
		if err != nil {
			writeError(w, r, err)
			return
		}
		if results == nil {
			results = []*toolrouter.Result{}
		}
		encode(w, r, http.StatusOK, map[string]any{"results": results})
	}
}
