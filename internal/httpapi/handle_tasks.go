package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Tasks runs calls as tasks the client polls (task.Runner; docs/mcp.md
// "Tasks").
type Tasks interface {
	Start(ctx context.Context, cr *toolrouter.CallRequest) (*toolrouter.Task, <-chan struct{}, error)
	Get(ctx context.Context, id string) (*toolrouter.Task, error)
	Cancel(ctx context.Context, id string) (*toolrouter.Task, error)
}

// lookup finds a registry tool by name (registry.Registry).
type lookup interface {
	Lookup(name string) (*toolrouter.Tool, bool)
}

// maxPreferWait bounds a Prefer: wait (RFC 7240): past it, the call is
// answered as a task.
const maxPreferWait = 5 * time.Minute

// preferWait is the wait=N (seconds) of a Prefer header; false when none.
func preferWait(r *http.Request) (time.Duration, bool) {
	for _, v := range r.Header.Values("Prefer") {
		for _, p := range strings.Split(v, ",") {
			token, _, _ := strings.Cut(p, ";")
			name, val, ok := strings.Cut(token, "=")
			if !ok || !strings.EqualFold(strings.TrimSpace(name), "wait") {
				continue
			}
			n, err := strconv.Atoi(strings.Trim(strings.TrimSpace(val), `"`))
			if err != nil || n < 0 {
				continue // RFC 7240: a preference not understood is ignored
			}
			return min(time.Duration(n)*time.Second, maxPreferWait), true
		}
	}
	return 0, false
}

// taskMode is the registry's task key of the tool cr calls, as the
// caller's view resolves it (TaskUnset when it resolves to none).
func taskMode(ctx context.Context, tools Tools, cr *toolrouter.CallRequest) toolrouter.TaskMode {
	if cr.Unreadable != nil {
		return toolrouter.TaskUnset
	}
	if cr.View != nil {
		call := cr.Call
		if t, _, ok := cr.View.ResolveCall(ctx, &call); ok && t != nil {
			return t.Task
		}
		return toolrouter.TaskUnset
	}
	if l, ok := tools.(lookup); ok {
		if t, ok := l.Lookup(cr.Call.ToolName); ok {
			return t.Task
		}
	}
	return toolrouter.TaskUnset
}

// routeTask answers POST /route as a task when the tool or the caller asks
// for one (docs/mcp.md "Tasks"): 202 with the task at once (Prefer:
// respond-async, or a tool of task: required), or after the caller's
// Prefer: wait, unless the call finished by then (200 with its result). It
// reports whether it answered.
func routeTask(w http.ResponseWriter, r *http.Request, tasks Tasks, tools Tools, cr *toolrouter.CallRequest) bool {
	if tasks == nil {
		return false
	}
	mode := taskMode(r.Context(), tools, cr)
	async := preferAsync(r)
	wait, waits := preferWait(r)
	if mode == toolrouter.TaskForbidden || !(async || waits || mode == toolrouter.TaskRequired) {
		return false
	}
	t, done, err := tasks.Start(r.Context(), cr)
	if err != nil {
		writeError(w, r, err)
		return true
	}
	if !async && waits && wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case <-done:
			if now, err := tasks.Get(r.Context(), t.TaskID); err == nil && now.Status == toolrouter.TaskCompleted && now.Result != nil {
				encode(w, r, http.StatusOK, now.Result)
				return true
			} else if err == nil {
				t = now
			}
		case <-timer.C:
		case <-r.Context().Done():
			return true // the client left; the task runs on
		}
	}
	w.Header().Set("Location", "/tasks/"+t.TaskID)
	if async {
		w.Header().Set("Preference-Applied", "respond-async")
	}
	encode(w, r, http.StatusAccepted, t)
	return true
}

func handleGetTask(tasks Tasks) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		t, err := tasks.Get(r.Context(), pathParam(r, "id"))
		if err != nil {
			writeError(w, r, err)
			return
		}
		encode(w, r, http.StatusOK, t)
	}
}

func handleCancelTask(tasks Tasks) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		t, err := tasks.Cancel(r.Context(), pathParam(r, "id"))
		if err != nil {
			writeError(w, r, err)
			return
		}
		if t.Status.Terminal() {
			encode(w, r, http.StatusOK, t)
			return
		}
		w.Header().Set("Location", "/tasks/"+t.TaskID)
		encode(w, r, http.StatusAccepted, t)
	}
}
