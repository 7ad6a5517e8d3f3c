// Command mcpfixture is an MCP server (streamable HTTP, official Go SDK:
// sessions up to protocol 2025-11-25, stateless from 2026-07-28) for tests: it serves the fixture tools the MCP conformance suite
// (@modelcontextprotocol/conformance) calls, so that the suite can run
// against toolrouterd's /mcp fronting it (e2e/mcpconformance_test.go), plus
// tools for toolrouterd's own pass-through and output-schema tests. Its
// multi round-trip tools (mrtr.go) answer input_required under protocol
// 2026-07-28 until the retry carries the input they asked for; its
// backend-task tools (tasks.go) answer a client of the tasks extension
// with tasks of their own.
//
//	MCPFIXTURE_ADDR=127.0.0.1:3001 mcpfixture    # serves /mcp
//	mcpfixture -stdio                             # serves stdin/stdout
//
// With -stdio it is a stdio MCP server (newline-delimited JSON-RPC on
// stdin/stdout) that also has a tool "pid" answering its process id, so
// tests of toolrouterd's stdio supervisor can kill it, "big" answering
// a text of the bytes asked for (past the stdio line limit if asked) and
// "echo" answering its arguments as they arrived, "split" answering a
// text content and a structuredContent that differ; it
// writes a line to stderr when it starts, which toolrouterd logs. With
// MCPFIXTURE_STDERR_FLOOD=1 it also floods stderr with lines. Over HTTP,
// /control changes a tool's definition at runtime and counts calls
// (control.go).
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	var err error
	if len(os.Args) > 1 && os.Args[1] == "-stdio" {
		err = runStdio()
	} else {
		err = run(os.Getenv("MCPFIXTURE_ADDR"))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpfixture:", err)
		os.Exit(1)
	}
}

func newServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "mcpfixture", Version: "1.0.0"}, &mcp.ServerOptions{
		//lint:ignore SA1019 the conformance suite's test_tool_with_logging needs the (deprecated, still served) logging capability
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}, Logging: &mcp.LoggingCapabilities{}},
	})
	addTools(srv)
	addPrompts(srv) // prompts.go
	return srv
}

// runStdio serves one session on stdin/stdout until stdin closes or a
// signal arrives.
func runStdio() error {
	srv := newServer()
	srv.AddTool(&mcp.Tool{Name: "pid", Description: "Returns the server's process id.", InputSchema: noArgs},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(os.Getpid())}},
				StructuredContent: map[string]any{"pid": os.Getpid()}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "big", Description: "Returns a text of the given number of bytes, on one stdout line.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"bytes": map[string]any{"type": "integer"}}}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Bytes int }
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil || in.Bytes < 0 || in.Bytes > 64<<20 {
				return nil, fmt.Errorf("bytes: want 0..%d", 64<<20)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("b", in.Bytes)}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "echo", Description: "Returns its arguments as they arrived.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"msg":{"type":"string"},"tag":{"type":"string"},"secret":{"type":"string"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args map[string]any
			_ = json.Unmarshal(req.Params.Arguments, &args)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}},
				StructuredContent: args}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "split", Description: "Returns text as its text content and structured as its structuredContent.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"structured":{"type":"object"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct {
				Text       string         `json:"text"`
				Structured map[string]any `json:"structured"`
			}
			_ = json.Unmarshal(req.Params.Arguments, &in)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}, StructuredContent: in.Structured}, nil
		})
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(os.Stderr, "mcpfixture serving on stdio (pid %d)\n", os.Getpid())
	if os.Getenv("MCPFIXTURE_STDERR_FLOOD") == "1" {
		go floodStderr()
	}
	err := srv.Run(ctx, &mcp.StdioTransport{})
	if ctx.Err() != nil || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// floodStderr writes short lines to stderr, one write each, as fast as
// the reader takes them: a misbehaving server whose drain must stay cheap.
func floodStderr() {
	line := []byte("mcpfixture flooding stderr: " + strings.Repeat("x", 40) + "\n")
	for {
		if _, err := os.Stderr.Write(line); err != nil {
			return
		}
	}
}

func run(addr string) error {
	if addr == "" {
		addr = "127.0.0.1:3001"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := newServer()
	mux := http.NewServeMux()
	newControl(srv).routes(mux)
	tasks := newBackendTasks(srv)
	tasks.routes(mux)
	get := func(*http.Request) *mcp.Server { return srv }
	sessions := mcp.NewStreamableHTTPHandler(get, nil)
	// The SDK serves protocol 2026-07-28 only statelessly: a request that
	// says it speaks it goes to a stateless handler, as on a current server.
	stateless := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get("Mcp-Protocol-Version"); v >= "2026-07-28" {
			if tasks.serve(w, r) { // backend tasks (tasks.go)
				return
			}
			stateless.ServeHTTP(w, r)
			return
		}
		sessions.ServeHTTP(w, r)
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	fmt.Printf("mcpfixture listening on http://%s/mcp\n", ln.Addr())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for ss := range srv.Sessions() {
		_ = ss.Close()
	}
	return hs.Shutdown(sctx)
}

// The conformance suite's minimal media (a 1x1 red PNG, a silent WAV).
const (
	pngBase64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	wavBase64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
)

func decode(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

type handler = func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error)

func content(blocks ...mcp.Content) handler {
	return func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: blocks}, nil
	}
}

var noArgs = json.RawMessage(`{"type":"object","properties":{}}`)

func addTools(srv *mcp.Server) {
	add := func(name, desc string, input json.RawMessage, h handler) {
		srv.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: input}, h)
	}
	png, wav := decode(pngBase64), decode(wavBase64)

	// The conformance suite's fixture tools, answering what it prints.
	add("test_simple_text", "Returns simple text.", noArgs,
		content(&mcp.TextContent{Text: "This is a simple text response for testing."}))
	add("test_image_content", "Returns an image.", noArgs,
		content(&mcp.ImageContent{Data: png, MIMEType: "image/png"}))
	add("test_audio_content", "Returns audio.", noArgs,
		content(&mcp.AudioContent{Data: wav, MIMEType: "audio/wav"}))
	add("test_embedded_resource", "Returns an embedded resource.", noArgs,
		content(&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content.",
		}}))
	add("test_multiple_content_types", "Returns text, an image and a resource.", noArgs,
		content(&mcp.TextContent{Text: "Multiple content types test:"},
			&mcp.ImageContent{Data: png, MIMEType: "image/png"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
				URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`,
			}}))
	add("test_tool_with_logging", "Logs three messages while it runs.", noArgs,
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
				if i > 0 {
					time.Sleep(50 * time.Millisecond)
				}
				//lint:ignore SA1019 the conformance suite's test_tool_with_logging sends (deprecated, still served) log notifications
				_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "mcpfixture", Data: msg})
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Tool with logging executed successfully"}}}, nil
		})
	// A long call for tasks (docs/mcp.md "Tasks"): progress at its start
	// and after each tenth; a cancelled call ends at once.
	add("slow", "Sleeps ms milliseconds (at most 10 minutes), reporting progress, then answers.",
		json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"maximum":600000}}}`),
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ MS int64 }
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil || in.MS < 0 || in.MS > 600000 {
				return nil, fmt.Errorf("ms: want 0..600000")
			}
			token := req.Params.GetProgressToken()
			step := time.Duration(in.MS) * time.Millisecond / 10
			for i := 0; i <= 10; i++ {
				if token != nil {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
						Progress: float64(i * 10), Total: 100, Message: fmt.Sprintf("step %d of 10", i)})
				}
				if i == 10 {
					break
				}
				t := time.NewTimer(step)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return nil, fmt.Errorf("cancelled after step %d of 10: %w", i, ctx.Err())
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("slept %d ms", in.MS)}}}, nil
		})
	add("test_tool_with_progress", "Reports progress 0, 50, 100 of 100.", noArgs,
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			token := req.Params.GetProgressToken()
			for i, p := range []float64{0, 50, 100} {
				if i > 0 {
					time.Sleep(50 * time.Millisecond)
				}
				if token != nil {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: p, Total: 100})
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(token)}}}, nil
		})
	add("test_error_handling", "Always fails.", noArgs,
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			//lint:ignore ST1005 the conformance suite's text, verbatim
			return nil, errors.New("This tool intentionally returns an error for testing")
		})
	add("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features", json.RawMessage(`{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"type": "object",
		"$defs": {"address": {"$anchor": "addressDef", "type": "object",
			"properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
		"properties": {
			"name": {"type": "string"},
			"address": {"$ref": "#/$defs/address"},
			"contactMethod": {"type": "string", "enum": ["phone", "email"]},
			"phone": {"type": "string"},
			"email": {"type": "string"}
		},
		"allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
		"if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
		"then": {"required": ["phone"]},
		"else": {"required": ["email"]},
		"additionalProperties": false
	}`), func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "called with " + string(req.Params.Arguments)}}}, nil
	})

	addMRTRTools(add)

	// toolrouterd's own tests: every block type, structuredContent and
	// _meta, to be passed through unchanged.
	add("all_content", "Returns every content block type.", noArgs,
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{
				Meta: mcp.Meta{"mcpfixture/key": "value"},
				Content: []mcp.Content{
					&mcp.TextContent{Text: "text", Annotations: &mcp.Annotations{Priority: 0.5}},
					&mcp.ImageContent{Data: png, MIMEType: "image/png"},
					&mcp.AudioContent{Data: wav, MIMEType: "audio/wav"},
					&mcp.ResourceLink{URI: "test://linked", Name: "linked", MIMEType: "text/plain"},
					&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://blob", MIMEType: "image/png", Blob: png}},
				},
				StructuredContent: map[string]any{"kinds": 5},
			}, nil
		})
	// An output schema, and an output that matches it or (bad: true) not.
	srv.AddTool(&mcp.Tool{
		Name:         "structured",
		Description:  "Returns {n: 1}, or {n: \"one\"} when bad is true.",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"bad":{"type":"boolean"}}}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"number"}},"required":["n"]}`),
	}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct {
			Bad bool `json:"bad"`
		}
		_ = json.Unmarshal(req.Params.Arguments, &in)
		out := map[string]any{"n": 1}
		if in.Bad {
			out = map[string]any{"n": "one"}
		}
		b, _ := json.Marshal(out)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: out}, nil
	})
}
