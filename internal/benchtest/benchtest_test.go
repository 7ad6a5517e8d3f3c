package benchtest_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/benchtest"
)

// Each Do sends the whole body again and sees only its own answer: the
// writer's status, header and body are reset between calls.
func TestClientRewindsTheBodyAndResetsTheWriter(t *testing.T) {
	calls := 0
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Fatal(err)
		}
		if calls == 1 {
			w.Header().Set("X-First", "1")
			w.WriteHeader(http.StatusTeapot)
		}
		_, _ = io.WriteString(w, strings.ToUpper(string(b)))
	})
	req, err := http.NewRequest(http.MethodPost, "http://x/", nil)
	if err != nil {
		t.Fatal(err)
	}
	c := benchtest.NewClient(h, req, []byte("hi"))
	if w := c.Do(); w.Code != http.StatusTeapot || w.Body.String() != "HI" || w.Header().Get("X-First") != "1" {
		t.Fatalf("first call: %d %q %v", w.Code, w.Body.String(), w.Header())
	}
	if w := c.Do(); w.Code != http.StatusOK || w.Body.String() != "HI" || w.Header().Get("X-First") != "" {
		t.Fatalf("second call: %d %q %v", w.Code, w.Body.String(), w.Header())
	}
}

// The writer supports what the server's does: flushing and deadlines,
// through http.ResponseController, without an error.
func TestWriterSupportsFlushAndDeadlines(t *testing.T) {
	rc := http.NewResponseController(benchtest.NewWriter())
	if err := rc.Flush(); err != nil {
		t.Errorf("Flush: %v", err)
	}
	if err := rc.SetReadDeadline(time.Time{}); err != nil {
		t.Errorf("SetReadDeadline: %v", err)
	}
	if err := rc.SetWriteDeadline(time.Time{}); err != nil {
		t.Errorf("SetWriteDeadline: %v", err)
	}
}
