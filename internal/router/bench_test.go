package router_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/audit"
	"github.com/toolrouterd/toolrouterd/internal/guardrail"
	"github.com/toolrouterd/toolrouterd/internal/metrics"
	"github.com/toolrouterd/toolrouterd/internal/pipeline"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/remote"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
)

// The benchmarks measure the router alone: registry lookup, argument
// validation, normalization, sequence allocation (memory store), the remote
// client building and sending the tool request and reading its reply, result
// shaping and metrics. The network is replaced by a RoundTripper that answers
// every call at once, so the figures exclude the tool and the loopback hop.

const benchRegistry = `tools:
  - name: test/echo
    description: Echo tool
    endpoint: http://127.0.0.1:9/echo
    kind: tool
    input_schema:
      type: object
      properties: {msg: {type: string}}
    timeout: 10s
`

const echoReply = `{"msg":"hi"}`

// echoTransport answers every request 200 {"msg":"hi"} without a network.
type echoTransport struct{}

func (echoTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{
		Status:        "200 OK",
		StatusCode:    http.StatusOK,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(strings.NewReader(echoReply)),
		ContentLength: int64(len(echoReply)),
		Request:       r,
	}, nil
}

func newBenchRouter(b *testing.B) *rig {
	b.Helper()
	reg, err := registry.Parse("bench.yaml", []byte(benchRegistry), os.Getenv)
	if err != nil {
		b.Fatalf("parse registry: %v", err)
	}
	holder := registry.NewHolder("bench.yaml", os.Getenv, reg) // as cmd/toolrouterd wires it
	return &rig{
		Tools:            func() pipeline.Tools { return holder.Current() },
		Exec:             remote.New(remote.Options{Transport: echoTransport{}}),
		Seq:              memory.New(),
		Observer:         metrics.New(),
		BatchConcurrency: 16,
	}
}

func decode(b *testing.B, s string) any {
	b.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		b.Fatalf("decode %s: %v", s, err)
	}
	return v
}

func openAICall(id string) string {
	return `{"id":"` + id + `","type":"function","function":{"name":"test/echo","arguments":"{\"msg\":\"hi\"}"}}`
}

func BenchmarkRoute(b *testing.B) {
	rt := newBenchRouter(b)
	payload := decode(b, openAICall("call_1"))
	ctx := context.Background()

	res, err := rt.Route(ctx, "bench", payload, nil)
	if err != nil || !res.Success || string(res.Output) != echoReply {
		b.Fatalf("sanity route: err=%v res=%+v", err, res)
	}

	b.ReportAllocs()
	for b.Loop() {
		res, err := rt.Route(ctx, "bench", payload, nil)
		if err != nil || !res.Success {
			b.Fatalf("route: err=%v res=%+v", err, res)
		}
	}
}

// BenchmarkRouteAudited is BenchmarkRoute with results stored and
// audited as the service wires them (memory store, audit log discarded).
func BenchmarkRouteAudited(b *testing.B) {
	rt := newBenchRouter(b)
	st := memory.New()
	rt.Seq, rt.Results = st, st
	rt.Audit = &audit.Trail{Store: st, Log: zerolog.Nop()}
	payload := decode(b, openAICall("call_1"))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := rt.Route(ctx, "bench", payload, nil)
		if err != nil || !res.Success {
			b.Fatalf("route: err=%v res=%+v", err, res)
		}
	}
}

// BenchmarkRouteParallel routes from GOMAXPROCS goroutines at once, all on
// one plan (the memory store's sequence lock is shared).
func BenchmarkRouteParallel(b *testing.B) {
	rt := newBenchRouter(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		payload := decode(b, openAICall("call_1"))
		for pb.Next() {
			res, err := rt.Route(ctx, "bench", payload, nil)
			if err != nil || !res.Success {
				b.Errorf("route: err=%v res=%+v", err, res)
				return
			}
		}
	})
}

// BenchmarkBatch16 routes a batch of 16 OpenAI calls (concurrency 16).
func BenchmarkBatch16(b *testing.B) {
	rt := newBenchRouter(b)
	payloads := make([]any, 16)
	for i := range payloads {
		payloads[i] = decode(b, openAICall(fmt.Sprintf("call_%d", i)))
	}
	ctx := context.Background()

	results, err := rt.Batch(ctx, "bench", payloads, nil)
	if err != nil || len(results) != len(payloads) {
		b.Fatalf("sanity batch: err=%v n=%d", err, len(results))
	}
	for i, r := range results {
		if !r.Success {
			b.Fatalf("sanity batch: result %d failed: %+v", i, r)
		}
	}

	b.ReportAllocs()
	for b.Loop() {
		results, err := rt.Batch(ctx, "bench", payloads, nil)
		if err != nil || len(results) != len(payloads) || !results[len(results)-1].Success {
			b.Fatalf("batch: err=%v n=%d", err, len(results))
		}
	}
}

// BenchmarkRouteWithHook is BenchmarkRoute with one guardrail webhook
// before each call, served on loopback by this process (docs/trusting-tools.md "Guardrail
// hooks"): the difference is the cost per call of one local hook.
func BenchmarkRouteWithHook(b *testing.B) {
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"decision":"allow"}`)
	}))
	defer hook.Close()
	reg, err := registry.Parse("bench.yaml", []byte(benchRegistry+"guardrails:\n  - {name: policy, endpoint: "+hook.URL+"}\n"), os.Getenv)
	if err != nil {
		b.Fatalf("parse registry: %v", err)
	}
	rt := newBenchRouter(b)
	rt.Tools = func() pipeline.Tools { return reg }
	client := guardrail.NewClient(nil)
	defer client.CloseIdleConnections()
	rt.Guardrails = &guardrail.Guards{Registry: func() guardrail.Registry { return reg }, Client: client}
	payload := decode(b, openAICall("call_1"))
	ctx := context.Background()
	res, err := rt.Route(ctx, "bench", payload, nil)
	if err != nil || !res.Success || string(res.Output) != echoReply {
		b.Fatalf("sanity route: err=%v res=%+v", err, res)
	}
	b.ReportAllocs()
	for b.Loop() {
		res, err := rt.Route(ctx, "bench", payload, nil)
		if err != nil || !res.Success {
			b.Fatalf("route: err=%v res=%+v", err, res)
		}
	}
}
