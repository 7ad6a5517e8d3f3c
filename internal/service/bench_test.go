package service_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/benchtest"
	"github.com/toolrouterd/toolrouterd/internal/config"
	"github.com/toolrouterd/toolrouterd/internal/exampletools"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/service"
	"github.com/toolrouterd/toolrouterd/internal/telemetry"
)

// BenchmarkServiceRoute is POST /route as `make bench-compare` sends it
// (router-memory, router-sqlite), through the service as cmd/toolrouterd
// wires it (service.New: every stage, exec decorator and middleware, the
// log at warn, tracing off), to the example tools' echo on a real loopback
// HTTP server. Only the gateway's own HTTP server is left out: the loop
// hands one reused request to the handler (its connection handling is the
// same as the bare Go proxy's). allocs/op and B/op include the echo
// server's and the outbound client's, which are the same for every change
// of the gateway; a CPU profile (-cpuprofile) shows the gateway's share.
func BenchmarkServiceRoute(b *testing.B) {
	for _, st := range []struct{ name, url string }{
		{"memory", "memory://"},
		{"sqlite", "sqlite://" + b.TempDir() + "/bench.db"},
	} {
		b.Run(st.name, func(b *testing.B) {
			h := newBenchService(b, st.url)
			body := []byte(`{"plan_id":"bench","tool_call":{"id":"call_1","type":"function","function":{"name":"test/echo","arguments":"{\"msg\":\"hi\"}"}}}`)
			c := benchtest.NewClient(h, benchRequest(body), body)
			if w := doRoute(b, c); !bytes.Contains(w.Body.Bytes(), []byte(`"success":true`)) || !bytes.Contains(w.Body.Bytes(), []byte(`{"msg":"hi"}`)) {
				b.Fatalf("sanity POST /route: %d %s", w.Code, w.Body.String())
			}
			b.ReportAllocs()
			for b.Loop() {
				doRoute(b, c)
			}
		})
	}
}

// newBenchService is cmd/toolrouterd's service (serve.go) on the store at
// url, with bench/compare.sh's registry: test/echo at an example tools
// server on loopback.
func newBenchService(b *testing.B, url string) http.Handler {
	b.Helper()
	tools := httptest.NewServer(exampletools.Handler())
	b.Cleanup(tools.Close)
	return newBenchServiceWith(b, url, `tools:
  - name: test/echo
    description: Echo tool (benchmark)
    endpoint: `+tools.URL+`/echo
    kind: tool
    input_schema:
      type: object
      properties: {msg: {type: string}}
    timeout: 10s
`)
}

// newBenchServiceWith is cmd/toolrouterd's service on the store at url
// with the registry regYAML.
func newBenchServiceWith(b *testing.B, url, regYAML string) http.Handler {
	b.Helper()
	env := map[string]string{
		"TOOLROUTER_STORE":     url,
		"TOOLROUTER_LOG_LEVEL": "warn",
		"TOOLROUTER_API_KEYS":  "",
	}
	for k, v := range env {
		b.Setenv(k, v)
	}
	cfg, err := config.Load()
	if err != nil {
		b.Fatal(err)
	}
	getenv := func(k string) string { return env[k] }
	reg, err := registry.Parse("bench.yaml", []byte(regYAML), getenv)
	if err != nil {
		b.Fatal(err)
	}
	tel, err := telemetry.Setup(context.Background(), getenv)
	if err != nil {
		b.Fatal(err)
	}
	level, _ := zerolog.ParseLevel(cfg.LogLevel)
	log := zerolog.New(io.Discard).Level(level).With().Timestamp().Str("service", "toolrouterd").Logger()
	svc, err := service.New(context.Background(), service.Options{Config: cfg, Registry: reg, Getenv: getenv,
		Logger: log, Owner: "bench", Telemetry: tel, Version: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(svc.Close)
	return svc.Handler
}

func benchRequest(body []byte) *http.Request {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://127.0.0.1:8080/route", bytes.NewReader(body))
	if err != nil {
		panic(err)
	}
	req.RequestURI = "/route"
	req.RemoteAddr = "127.0.0.1:40000"
	req.Header["Content-Type"] = []string{"application/json"}
	return req
}

// doRoute sends c's request once and returns the answer; one other than
// 200 fails b.
func doRoute(b *testing.B, c *benchtest.Client) *benchtest.Writer {
	w := c.Do()
	if w.Code != http.StatusOK {
		b.Fatalf("POST /route: %d %s", w.Code, strings.TrimSpace(w.Body.String()))
	}
	return w
}
