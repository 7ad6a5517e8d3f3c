package mcpserver_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/benchtest"
	"github.com/toolrouterd/toolrouterd/internal/mcpserver"
	"github.com/toolrouterd/toolrouterd/internal/pipeline"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/remote"
	"github.com/toolrouterd/toolrouterd/internal/router"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// BenchmarkMCPToolsCall measures one tools/call of protocol 2026-07-28
// (what the SDK's client sends by default, and bench/mcpload) through the
// /mcp handler in process: the handler, the router (memory store, results
// kept) and the remote client, with the tool's network hop replaced by a
// RoundTripper that answers {"msg":"hi"} at once. The request and the
// writer are reused, so allocs/op and B/op are the handler's. Sub-benchmarks:
// fast (the handler's own tools/call path, fastcall.go) and sdk (every call
// through the go-sdk, its ablation).
func BenchmarkMCPToolsCall(b *testing.B) {
	for _, mode := range []struct {
		name string
		sdk  bool
	}{{"fast", false}, {"sdk", true}} {
		b.Run(mode.name, func(b *testing.B) {
			h := benchHandler(b)
			mcpserver.SetSDKCalls(h, mode.sdk)
			name := mcpName("test/echo")
			body, hdr := modern("tools/call", name, `{"name":"`+name+`","arguments":{"msg":"hi"}}`)
			c := newBenchCall(h, []byte(body), hdr)
			doCall(b, c) // warm: the registry synced, the plan's sequence made
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				doCall(b, c)
			}
		})
	}
}

const benchEchoReply = `{"msg":"hi"}`

type benchEcho struct{}

func (benchEcho) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(benchEchoReply)),
		ContentLength: int64(len(benchEchoReply)), Request: r}, nil
}

func benchHandler(b *testing.B) *mcpserver.Handler {
	b.Helper()
	reg, err := registry.Parse("registry.yaml", []byte(strings.ReplaceAll(registryYAML, "TOOLS", "http://127.0.0.1:9")), func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	st := memory.New()
	rt := router.New(router.Options{Exec: remote.New(remote.Options{Transport: benchEcho{}}), Seq: st, Finish: &router.Finisher{Results: st},
		Stages: []toolrouter.Stage{pipeline.Resolve(func() pipeline.Tools { return reg }), pipeline.Validate, pipeline.CheckOutput}})
	h := mcpserver.New(mcpserver.Deps{Router: rt, Tools: func() mcpserver.Tools { return reg }, Logger: zerolog.New(io.Discard)})
	b.Cleanup(h.Close)
	return h
}

// newBenchCall sends the same tools/call (body, with the headers hdr) to h
// again and again, reusing the request, its body and the writer.
func newBenchCall(h http.Handler, body []byte, hdr map[string]string) *benchtest.Client {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://127.0.0.1:8080/mcp", nil)
	if err != nil {
		panic(err)
	}
	req.RequestURI = "/mcp"
	req.RemoteAddr = "127.0.0.1:40000"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return benchtest.NewClient(h, req, body)
}

// doCall sends c's tools/call once; an answer other than 200 with the
// echo's text fails b.
func doCall(b *testing.B, c *benchtest.Client) {
	if w := c.Do(); w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), []byte(`"text":"{\"msg\":\"hi\"}"`)) {
		b.Fatalf("tools/call: %d %s", w.Code, w.Body.String())
	}
}
