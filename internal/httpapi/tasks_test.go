package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestRouteRespondAsyncIsATask: Prefer: respond-async answers 202 with a
// task and its Location; the task is polled at GET /tasks/{id} until it
// holds the call's RouteResult; cancelling a finished task changes
// nothing; an unknown task is 404.
func TestRouteRespondAsyncIsATask(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	w := s.serve("POST", "/route", echoCall, "Prefer", "respond-async")
	var tk toolrouter.Task
	if w.Code != http.StatusAccepted || json.Unmarshal(w.Body.Bytes(), &tk) != nil || tk.TaskID == "" || tk.Status != toolrouter.TaskWorking {
		t.Fatalf("POST /route with respond-async: %d %s", w.Code, w.Body)
	}
	if got := w.Header().Get("Location"); got != "/tasks/"+tk.TaskID || w.Header().Get("Preference-Applied") != "respond-async" {
		t.Fatalf("Location %q, Preference-Applied %q", got, w.Header().Get("Preference-Applied"))
	}
	if err := s.tasks.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	w = s.serve("GET", "/tasks/"+tk.TaskID, "")
	var done toolrouter.Task
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &done) != nil || done.Status != toolrouter.TaskCompleted ||
		done.Result == nil || !done.Result.Success || done.Result.ToolName != "test/echo" || done.ToolCallID != done.Result.ToolCallID {
		t.Fatalf("GET /tasks/{id}: %d %s", w.Code, w.Body)
	}
	if w = s.serve("POST", "/tasks/"+tk.TaskID+"/cancel", ""); w.Code != http.StatusOK {
		t.Fatalf("cancel of a finished task: %d %s", w.Code, w.Body)
	}
	if w = s.serve("GET", "/tasks/task_none", ""); w.Code != http.StatusNotFound {
		t.Fatalf("GET of an unknown task: %d %s", w.Code, w.Body)
	}
}

// TestRouteWaitThenTask: Prefer: wait=N answers the result when the call
// finishes in time, and the task (202) when it does not; the task is then
// cancelled, which reaches the call's context.
func TestRouteWaitThenTask(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	if w := s.serve("POST", "/route", echoCall, "Prefer", "wait=30"); w.Code != http.StatusOK {
		t.Fatalf("a fast call with wait=30: %d %s", w.Code, w.Body)
	}
	stopped := make(chan error, 1)
	s.router.stream = func(ctx context.Context, _ string, _ any, _ map[string]any, _ func(toolrouter.Update)) (*toolrouter.Result, error) {
		<-ctx.Done()
		stopped <- context.Cause(ctx)
		return &toolrouter.Result{}, nil
	}
	w := s.serve("POST", "/route", echoCall, "Prefer", "wait=0")
	var tk toolrouter.Task
	if w.Code != http.StatusAccepted || json.Unmarshal(w.Body.Bytes(), &tk) != nil || tk.TaskID == "" {
		t.Fatalf("a slow call with wait=0: %d %s", w.Code, w.Body)
	}
	w = s.serve("POST", "/tasks/"+tk.TaskID+"/cancel", "")
	var got toolrouter.Task
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &got) != nil || got.Status != toolrouter.TaskCancelled {
		t.Fatalf("cancel: %d %s", w.Code, w.Body)
	}
	if err := <-stopped; err == nil {
		t.Fatal("the call's context was not cancelled")
	}
}
