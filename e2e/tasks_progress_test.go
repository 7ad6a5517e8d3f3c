package e2e_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestTasksOfHTTPToolsReportProgress: an HTTP tool run as a task reports
// progress with a text/event-stream reply (docs/registry.md "Reporting
// progress"); the client polling GET /tasks/{id} sees it while the call
// runs, then the result.
func TestTasksOfHTTPToolsReportProgress(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("event: progress\ndata: {\"progress\": 1, \"total\": 2, \"message\": \"half way\"}\n\n"))
		w.(http.Flusher).Flush()
		select {
		case <-release: // the test saw the progress
		case <-r.Context().Done():
			return
		}
		_, _ = w.Write([]byte("event: result\ndata: {\"streamed\": true}\n\n"))
	}))
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})

	const key = "progress-key"
	router, _ := startRouter(t, taskRegistry(ln.Addr().String()), "TOOLROUTER_API_KEYS="+key, "TOOLROUTER_LOG_LEVEL=warn")
	id := taskRoute(t, router.URL(), key, 0)
	m := taskPoll(t, router.URL(), key, id, func(m map[string]any) bool { return m["progress"] != nil })
	if b, _ := json.Marshal(m["progress"]); m["status"] != "working" || string(b) != `{"message":"half way","progress":1,"total":2}` {
		t.Fatalf("task with progress: %v", m)
	}
	close(release)
	m = taskPoll(t, router.URL(), key, id, taskStatus("completed"))
	if b, _ := json.Marshal(m["result"]); !strings.Contains(string(b), `"output":{"streamed":true}`) || !strings.Contains(string(b), `"success":true`) {
		t.Fatalf("completed task: %v", m)
	}
}
