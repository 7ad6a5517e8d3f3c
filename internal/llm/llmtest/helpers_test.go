package llmtest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// testdata/recorded holds copies of shared/fixtures/provider-payloads/
// responses (real provider bodies; sources in that folder's README).
func recorded(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "recorded", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func recordedJSON(t *testing.T, name string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(recorded(t, name), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

type reply struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

// post sends body (a JSON-marshalled value, or []byte as is) to url.
func post(t *testing.T, url string, header map[string]string, body any) reply {
	t.Helper()
	var raw []byte
	switch b := body.(type) {
	case []byte:
		raw = b
	case string:
		raw = []byte(b)
	default:
		var err error
		raw, err = json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, raw: out}
	_ = json.Unmarshal(out, &r.body)
	return r
}

// shape is the structure of a JSON value: object keys (recursively) and the
// kind of every leaf; arrays are described by their first element; a tool
// call's "arguments"/"input" object is opaque (it is the model's).
func shape(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, c := range x {
			if _, isObj := c.(map[string]any); isObj && (k == "arguments" || k == "input") {
				out[k] = "object"
				continue
			}
			out[k] = shape(c)
		}
		return out
	case []any:
		if len(x) == 0 {
			return "[]"
		}
		return []any{shape(x[0])}
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	case nil:
		return "null"
	}
	return "?"
}

func shapeDiff(t *testing.T, what string, want, got any) {
	t.Helper()
	ws, _ := json.Marshal(shape(want))
	gs, _ := json.Marshal(shape(got))
	if !bytes.Equal(ws, gs) {
		t.Errorf("%s: shape differs from the recorded response\nrecorded: %s\nfake:     %s", what, ws, gs)
	}
}

func keysOf(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// sseEvents reads a text/event-stream body into (event, data) pairs.
type sseEvent struct {
	name string
	data string
}

func sseEvents(t *testing.T, raw []byte) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.data != "" || cur.name != "" {
				out = append(out, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		}
	}
	if cur.data != "" || cur.name != "" {
		out = append(out, cur)
	}
	return out
}

func errorMessage(r reply) string {
	if e, ok := r.body["error"].(map[string]any); ok {
		m, _ := e["message"].(string)
		return m
	}
	if e, ok := r.body["error"].(string); ok {
		return e
	}
	return ""
}
