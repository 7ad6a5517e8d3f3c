package service_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/benchtest"
)

// benchOutput is a tool's JSON output of about size bytes, as a search or
// listing tool answers: an object holding an array of records with
// numbers, short and long strings (escaped quotes, non-ASCII text, a URL
// with &), a nested object and an array of strings. It is the same for
// the same size.
func benchOutput(size int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"query":"fox","total":`)
	b.WriteString(strconv.Itoa(size / 300))
	b.WriteString(`,"items":[`)
	for i := 0; ; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"title":"Result %d: the quick brown fox","url":"https://example.com/item/%d?ref=search&page=2",`+
			`"snippet":"The \"quick\" brown fox jumps over the lazy dog; café, naïve, 東京 — item %d of the list.","score":0.%03d,`+
			`"tags":["alpha","beta"],"meta":{"created":"2026-12-08T01:00:00Z","views":%d}}`, i, i, i, i, i%1000, i*37)
		if b.Len() >= size-len(`]}`) {
			break
		}
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// BenchmarkServiceRouteOutput is BenchmarkServiceRoute with a tool whose
// output is small (one object), ~64 KB or ~1 MB (benchOutput), answered
// with its Content-Length by a loopback server, on memory://: what the
// gateway does with an output of each size, from the tool's reply to the
// bytes of /route's answer (issue 37 item 1). "policies" adds
// redact_secrets and an output budget of 16 KiB (the output is shaped,
// the whole one stored).
func BenchmarkServiceRouteOutput(b *testing.B) {
	for _, size := range []struct {
		name string
		out  []byte
	}{
		{"small", []byte(`{"msg":"hi","n":1}`)},
		{"64KB", benchOutput(64 << 10)},
		{"1MB", benchOutput(1 << 20)},
	} {
		for _, pol := range []struct{ name, tool, registry string }{
			{"plain", "", ""},
			{"policies", "    max_output_bytes: 16384\n", "guardrails:\n  - {name: secrets, builtin: redact_secrets, tools: [\"*\"]}\n"},
		} {
			b.Run(size.name+"/"+pol.name, func(b *testing.B) {
				tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header()["Content-Type"] = []string{"application/json"}
					w.Header()["Content-Length"] = []string{strconv.Itoa(len(size.out))}
					_, _ = w.Write(size.out)
				}))
				b.Cleanup(tool.Close)
				h := newBenchServiceWith(b, "memory://", `tools:
  - name: test/echo
    description: A tool answering a fixed output (benchmark)
    endpoint: `+tool.URL+`/out
    kind: tool
    input_schema:
      type: object
      properties: {msg: {type: string}}
    timeout: 10s
`+pol.tool+pol.registry)
				body := []byte(`{"plan_id":"bench","tool_call":{"id":"call_1","type":"function","function":{"name":"test/echo","arguments":"{\"msg\":\"hi\"}"}}}`)
				c := benchtest.NewClient(h, benchRequest(body), body)
				if w := doRoute(b, c); !bytes.Contains(w.Body.Bytes(), []byte(`"success":true`)) {
					b.Fatalf("sanity POST /route: %d %.300s", w.Code, w.Body.String())
				}
				b.SetBytes(int64(len(size.out)))
				b.ReportAllocs()
				for b.Loop() {
					doRoute(b, c)
				}
			})
		}
	}
}
