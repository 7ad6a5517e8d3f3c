package httpapi

import (
	"context"
	"net/http"

	"github.com/toolrouterd/toolrouterd/internal/agent"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Runs runs tool-calling loops (agent.Runner).
type Runs interface {
	Start(ctx context.Context, req agent.Request) (*agent.Pending, error)
	Execute(ctx context.Context, pr *agent.Pending, emit func(agent.Event)) *toolrouter.Run
	Background(ctx context.Context, pr *agent.Pending)
	Get(ctx context.Context, id string) (*toolrouter.Run, error)
	List(ctx context.Context, planID string, limit int) ([]*toolrouter.Run, error)
	Cancel(ctx context.Context, id string) (run *toolrouter.Run, running bool, err error)
}

func handleStartRun(runs Runs) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, err := decode[agent.Request](r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		pr, err := runs.Start(r.Context(), req)
		if err != nil {
			writeError(w, r, err)
			return
		}
		switch {
		case preferAsync(r):
			// Answer with the run as accepted: once in the background it is
			// the loop's to change.
			accepted := *pr.Run
			runs.Background(r.Context(), pr)
			w.Header().Set("Location", "/runs/"+accepted.RunID)
			w.Header().Set("Preference-Applied", "respond-async")
			encode(w, r, http.StatusAccepted, &accepted)
		case wantsEventStream(r):
			s := startSSE(w, r)
			runs.Execute(r.Context(), pr, func(e agent.Event) { s.send(string(e.Type), e.Data) })
			s.close()
		default:
			// A client that hangs up cancels the run: r.Context() ends.
			run := runs.Execute(r.Context(), pr, nil)
			if run.Status == toolrouter.RunAwaitingApproval {
				// Paused for approvals: not an hour on this connection.
				w.Header().Set("Location", "/runs/"+run.RunID)
				encode(w, r, http.StatusAccepted, run)
				return
			}
			encode(w, r, http.StatusOK, run)
		}
	}
}

func handleGetRun(runs Runs) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		run, err := runs.Get(r.Context(), pathParam(r, "id"))
		if err != nil {
			writeError(w, r, err)
			return
		}
		encode(w, r, http.StatusOK, run)
	}
}

func handleListRuns(runs Runs) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		limit, err := pageLimit(r.URL.Query())
		if err != nil {
			writeError(w, r, err)
			return
		}
		list, err := runs.List(r.Context(), r.URL.Query().Get("plan_id"), limit)
		if err != nil {
			writeError(w, r, err)
			return
		}
		if list == nil {
			list = []*toolrouter.Run{}
		}
		encode(w, r, http.StatusOK, map[string]any{"runs": list})
	}
}

// handleCancelRun asks for a run to end cancelled (api/openapi.yaml,
// cancelRun): 202 while it runs, 200 when it had already finished.
func handleCancelRun(runs Runs) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		run, running, err := runs.Cancel(r.Context(), pathParam(r, "id"))
		if err != nil {
			writeError(w, r, err)
			return
		}
		status := http.StatusOK
		if running {
			status = http.StatusAccepted
			w.Header().Set("Location", "/runs/"+run.RunID)
		}
		encode(w, r, status, run)
	}
}
