package router_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/guardrail"
	"github.com/toolrouterd/toolrouterd/internal/pipeline"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/remote"
	"github.com/toolrouterd/toolrouterd/internal/shape"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// onceTransport answers every request 200 with its body, whatever it is.
type onceTransport struct{ body []byte }

func (o *onceTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(o.body)),
		ContentLength: int64(len(o.body)), Request: r}, nil
}

// onceResults keeps the bytes the store was given for each result, and
// what encoding/json makes of the same result.
type onceResults struct {
	mu          sync.Mutex
	stored, std []byte
}

func (o *onceResults) SaveResult(_ context.Context, res *toolrouter.Result, _ ...toolrouter.AuditRecord) error {
	b, err := res.Encoded()
	if err != nil {
		return err
	}
	plain := *res
	plain.JSON = nil
	std, err := json.Marshal(&plain)
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stored, o.std = b, std
	return nil
}

// onceOutput is a random tool output: JSON values of every kind with
// white space where JSON allows it, strings with escapes, HTML, line
// separators, invalid UTF-8 (which the executor replaces), secrets (which
// redaction replaces), MCP-shaped media content, long arrays (which a
// budget shapes), or a reply with nothing in it.
func onceOutput(rng *rand.Rand) []byte {
	strs := []string{`"hi"`, `"<b>&amp;</b>"`, "\"line\u2028sep\u2029\"", "\"bad \xff utf-8 \xc3\"", `"quote \" back \\ slash \/ \u00e9 \ud83d\ude00"`,
		`"password=hunter2hunter2"`, `"Bearer abcdefghijklmnopqrstuvwx"`, `"ünï©ødé 😀"`, `"` + strings.Repeat("long text ", 60) + `"`, `""`}
	ws := []string{"", "", " ", "\n", "\t", "\r\n  "}
	w := func() string { return ws[rng.IntN(len(ws))] }
	var value func(depth int) string
	value = func(depth int) string {
		switch k := rng.IntN(9); {
		case k == 0:
			return []string{"0", "-1.50", "1e400", "12345678901234567890", "2.5E-3"}[rng.IntN(5)]
		case k == 1:
			return []string{"true", "false", "null"}[rng.IntN(3)]
		case k < 4 || depth > 3:
			return strs[rng.IntN(len(strs))]
		case k < 6:
			var b strings.Builder
			b.WriteString("[" + w())
			n := 5
			if depth == 0 {
				n = 40 // long enough for a budget to cut
			}
			for i := range rng.IntN(n) {
				if i > 0 {
					b.WriteString(w() + "," + w())
				}
				b.WriteString(value(depth + 1))
			}
			return b.String() + w() + "]"
		default:
			var b strings.Builder
			b.WriteString("{" + w())
			keys := []string{`"a"`, `"password"`, `"content"`, `"_meta"`, `"<k>"`, `"api_key"`, `"id"`, `"x\u0041"`}
			for i := range rng.IntN(6) {
				if i > 0 {
					b.WriteString(w() + "," + w())
				}
				b.WriteString(fmt.Sprintf(`%s%s:%s%s`, keys[rng.IntN(len(keys))], w(), w(), value(depth+1)))
				if rng.IntN(4) == 0 {
					b.WriteString("," + keys[rng.IntN(len(keys))] + ":" + value(depth+1))
				}
			}
			return b.String() + w() + "}"
		}
	}
	switch rng.IntN(12) {
	case 0:
		return nil // an empty reply: output null
	case 1:
		return []byte(w() + `{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"},{"type":"text","text":"a <cat>"}]}` + w())
	}
	return []byte(w() + value(0) + w())
}

// TestOutputOnceAsBefore: outputs go through the pipeline as service.New
// builds it (remote, redact_secrets, output budgets, every provider's
// result message) checked once, by the executor, and encoded without
// being parsed again (issue 37 item 1); the answer and the stored
// result (the whole output of a shaped one) are byte for byte what
// encoding/json makes of the same result, as they were before (the
// router's encoding was held to encoding/json's: TestResultJSONAsEncodingJSON),
// over 1,500 generated outputs.
func TestOutputOnceAsBefore(t *testing.T) {
	reg, err := registry.Parse("once.yaml", []byte(`tools:
  - name: test/plain
    description: A tool
    endpoint: http://127.0.0.1:9/plain
    kind: tool
    input_schema: {type: object}
  - name: test/shaped
    description: A tool with a budget
    endpoint: http://127.0.0.1:9/shaped
    kind: tool
    input_schema: {type: object}
    max_output_bytes: 256
guardrails:
  - {name: secrets, builtin: redact_secrets, tools: ["*"]}
`), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	tr := &onceTransport{}
	results := &onceResults{}
	rt := &rig{
		Tools:      func() pipeline.Tools { return reg },
		Exec:       remote.New(remote.Options{Transport: tr}),
		Seq:        memory.New(),
		Results:    results,
		Guardrails: &guardrail.Guards{Registry: func() guardrail.Registry { return reg }},
		Shape:      shape.New(),
	}
	payloads := map[string]func(tool string) string{
		"openai": func(tool string) string {
			return `{"id":"call_1","type":"function","function":{"name":"` + tool + `","arguments":"{}"}}`
		},
		"anthropic": func(tool string) string { return `{"type":"tool_use","id":"toolu_1","name":"` + tool + `","input":{}}` },
		"gemini":    func(tool string) string { return `{"functionCall":{"name":"` + tool + `","args":{}}}` },
		"bedrock":   func(tool string) string { return `{"toolUse":{"toolUseId":"tu_1","name":"` + tool + `","input":{}}}` },
	}
	rng := rand.New(rand.NewPCG(37, 2))
	ctx := context.Background()
	shaped := 0
	for i := range 1500 {
		tr.body = onceOutput(rng)
		tool := []string{"test/plain", "test/shaped"}[i%2]
		f := []string{"openai", "anthropic", "gemini", "bedrock"}[rng.IntN(4)]
		var payload any
		if err := json.Unmarshal([]byte(payloads[f](tool)), &payload); err != nil {
			t.Fatal(err)
		}
		res, err := rt.Route(ctx, "once", payload, nil)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if !res.Success || string(res.ProviderFormat) != f {
			t.Fatalf("case %d (%s, %q): success %v, format %s, error %v", i, f, tr.body, res.Success, res.ProviderFormat, res.Error)
		}
		plain := *res
		plain.JSON = nil
		want, err := json.Marshal(&plain)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if !bytes.Equal(res.JSON, want) {
			t.Fatalf("case %d (%s, %q): the answer differs from encoding/json's:\n got %s\nwant %s", i, f, tr.body, res.JSON, want)
		}
		if !bytes.Equal(results.stored, results.std) {
			t.Fatalf("case %d (%s, %q): the stored result differs from encoding/json's:\n got %s\nwant %s", i, f, tr.body, results.stored, results.std)
		}
		if res.Truncated {
			shaped++
		}
	}
	if shaped < 100 {
		t.Fatalf("only %d of the outputs were shaped", shaped)
	}
}
