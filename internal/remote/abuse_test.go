package remote_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolrouterd/toolrouterd/internal/remote"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// A 2xx reply whose Content-Type is not JSON is a non-JSON reply, whatever
// its body (issue 14, item 10); JSON types with parameters or a +json
// suffix, and no Content-Type at all, are JSON.
func TestCallNonJSONContentType(t *testing.T) {
	for ct, wantOK := range map[string]bool{
		"text/plain; charset=utf-8":        false,
		"text/html":                        false,
		"application/octet-stream":         false,
		"not a media type;;":               false,
		"application/json; charset=utf-8":  true,
		"Application/JSON":                 true,
		"application/problem+json":         true,
		"application/vnd.tool.result+json": true,
		"":                                 true,
	} {
		srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
			if ct == "" {
				w.Header()["Content-Type"] = nil // net/http sends none
			} else {
				w.Header().Set("Content-Type", ct)
			}
			_, _ = io.WriteString(w, `{"ok":true}`)
		})
		out := newClient(t, remote.Options{}).Call(context.Background(), toolrouter.ExecRequest{Tool: newTool(srv.URL)})
		if wantOK {
			assertSuccess(t, out)
			continue
		}
		assertFailure(t, out, toolrouter.CategoryParse)
		if !strings.HasPrefix(out.Err, "tool returned a non-JSON reply (Content-Type ") || !strings.HasSuffix(out.Err, `: {"ok":true}`) {
			t.Errorf("Content-Type %q: err %q", ct, out.Err)
		}
	}
}

// Invalid UTF-8 in a JSON reply is replaced byte for byte by U+FFFD, as
// encoding/json replaces it in strings, and the outcome says so (issue 14,
// item 3).
func TestCallInvalidUTF8IsReplaced(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("{\"text\":\"a\xff\xfeb\xe2\x82\",\"ok\":\"\xe2\x82\xac\"}"))
	})
	out := newClient(t, remote.Options{}).Call(context.Background(), toolrouter.ExecRequest{Tool: newTool(srv.URL)})
	assertSuccess(t, out)
	if !out.InvalidUTF8 || !utf8.Valid(out.Output) {
		t.Fatalf("InvalidUTF8 %v, output %q", out.InvalidUTF8, out.Output)
	}
	// What json.Marshal makes of the same bytes in a string.
	want, _ := json.Marshal("a\xff\xfeb\xe2\x82")
	var got struct{ Text, OK string }
	if err := json.Unmarshal(out.Output, &got); err != nil {
		t.Fatal(err)
	}
	var wantText string
	_ = json.Unmarshal(want, &wantText)
	if got.Text != wantText || got.OK != "€" {
		t.Fatalf("text %q ok %q, want %q and €", got.Text, got.OK, wantText)
	}

	clean := serve(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, `{"text":"é"}`) })
	out = newClient(t, remote.Options{}).Call(context.Background(), toolrouter.ExecRequest{Tool: newTool(clean.URL)})
	if assertSuccess(t, out); out.InvalidUTF8 {
		t.Fatal("valid UTF-8 reported as replaced")
	}
}

// Calls made with a Budget take their outputs from it; a reply that does
// not fit fails as resource, and one that is not kept gives its bytes back
// (issue 14, item 5).
func TestCallBudget(t *testing.T) {
	reply := `"` + strings.Repeat("x", 598) + `"` // 600 bytes
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/text" {
			w.Header().Set("Content-Type", "text/plain")
		}
		if r.URL.Path == "/chunked" {
			w.(http.Flusher).Flush() // no Content-Length
		}
		_, _ = io.WriteString(w, reply)
	})
	c := newClient(t, remote.Options{})
	b := toolrouter.NewBudget(1000)
	ctx := context.Background()
	if out := c.Call(ctx, toolrouter.ExecRequest{Tool: newTool(srv.URL + "/text"), Batch: b}); out.Success() {
		t.Fatal("text/plain accepted")
	}
	out := c.Call(ctx, toolrouter.ExecRequest{Tool: newTool(srv.URL), Batch: b})
	if assertSuccess(t, out); !out.Budgeted {
		t.Fatal("not taken from the budget")
	}
	for _, path := range []string{"/", "/chunked"} {
		out = c.Call(ctx, toolrouter.ExecRequest{Tool: newTool(srv.URL + path), Batch: b})
		assertFailure(t, out, toolrouter.CategoryResource)
		if !strings.Contains(out.Err, "TOOLROUTER_MAX_BATCH_OUTPUT_BYTES (1000 bytes): this output of ") || !strings.Contains(out.Err, "600 bytes was dropped") {
			t.Fatalf("%s: %q", path, out.Err)
		}
	}
	if !b.Take(400) || b.Take(1) {
		t.Fatal("the budget should have exactly 400 bytes left")
	}
}
