package mcpclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestMCPSSEParser reads every kind of line of the event stream format,
// delivered whole and a byte at a time.
func TestMCPSSEParser(t *testing.T) {
	long := strings.Repeat("x", 10000)                      // longer than the reader's buffer
	stream := ": comment\r\nid: 7\r\nretry: 1500\r\n\r\n" + // a priming event: id only
		"event: message\ndata: {\"a\":1}\n\n" +
		"data:first\ndata: second\nid: 8\n\n" +
		"event: other\ndata: skipped by the caller\n\n" +
		"unknown: field\ndata\n\n" + // "data" without a colon: an empty line of data
		"data: " + long + "\n\n" +
		"data: unfinished" // no blank line: dropped
	for _, oneByte := range []bool{false, true} {
		var r io.Reader = strings.NewReader(stream)
		if oneByte {
			r = iotest.OneByteReader(r)
		}
		p := sseParser{r: bufio.NewReaderSize(r, 4096)}
		var got []string
		for {
			name, data, err := p.next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, name+"|"+string(data))
		}
		want := []string{`message|{"a":1}`, "|first\nsecond", "other|skipped by the caller", "|", "|" + long}
		if !slices.Equal(got, want) {
			t.Errorf("oneByte %v: events = %.200q, want %.200q", oneByte, got, want)
		}
		if p.lastID != "8" || p.retry != 1500*time.Millisecond {
			t.Errorf("lastID %q retry %v", p.lastID, p.retry)
		}
	}
}

// TestMCPFastOutcome: the hot path's outcome of a result is the SDK
// path's (outcome), with the result as sent as the MCPResult.
func TestMCPFastOutcome(t *testing.T) {
	for _, c := range []struct {
		raw, output, err string
		cat              toolrouter.ErrorCategory
	}{
		{raw: `{"content":[{"type":"text","text":"hi"}]}`, output: `"hi"`},
		{raw: `{"content":[{"type":"text","text":" {\"a\": 1} "}]}`, output: `{"a":1}`},
		{raw: `{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`, output: `"a\nb"`},
		{raw: `{"content":[{"type":"text","text":"x"}],"structuredContent":{ "b": [1, 2] }}`, output: `{"b":[1,2]}`},
		{raw: `{"content":[],"structuredContent":null}`, output: `null`},
		{raw: `{"content":[{"type":"text","text":"permission denied"}],"isError":true}`, err: "permission denied", cat: toolrouter.CategoryPermission},
		{raw: `{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}]}`, output: `[{"type":"image","mimeType":"image/png","data":"aGk="}]`},
	} {
		out, _, err := fastOutcome(nil, json.RawMessage(c.raw))
		if err != nil {
			t.Errorf("%s: %v", c.raw, err)
			continue
		}
		if string(out.Output) != c.output || out.Err != c.err || out.Category != c.cat || !out.Answered {
			t.Errorf("%s: outcome %+v (output %s)", c.raw, out, out.Output)
		}
		if string(out.MCPResult) != c.raw {
			t.Errorf("%s: MCPResult %s", c.raw, out.MCPResult)
		}
	}
	if _, _, err := fastOutcome(nil, json.RawMessage(`{"content":{}}`)); err == nil {
		t.Error("a malformed result was accepted")
	}
}

// endedBody is an event stream whose end came with its last byte: it says
// so (Ended, as outbound's bodies do), and a read past the end blocks
// until unblock is closed.
type endedBody struct {
	r       *strings.Reader
	unblock chan struct{}
	closed  atomic.Bool
}

func (b *endedBody) Read(p []byte) (int, error) {
	if b.r.Len() == 0 {
		<-b.unblock
		return 0, io.EOF
	}
	n, _ := b.r.Read(p)
	if b.r.Len() == 0 {
		return n, io.EOF
	}
	return n, nil
}

func (b *endedBody) Ended() bool  { return b.r.Len() == 0 }
func (b *endedBody) Close() error { b.closed.Store(true); return nil }

// TestMCPStreamEndedNotDrained: a call's stream whose body says it ended
// with the response (directly, or through the progress tap) is closed by
// the call itself: no background drain takes a slot or reads it.
func TestMCPStreamEndedNotDrained(t *testing.T) {
	for _, tapped := range []bool{false, true} {
		body := &endedBody{
			r:       strings.NewReader("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[]}}\n\n"),
			unblock: make(chan struct{}),
		}
		var rc io.ReadCloser = body
		if tapped {
			rc = &sseTap{body: body, event: func([]byte) {}}
		}
		s := &server{drains: make(chan struct{}, maxDrains)}
		p := sseParser{r: bufio.NewReader(nil)}
		raw, done, err := s.drainStream(context.Background(), fastSession{}, []byte("7"), &http.Response{Body: rc}, &p, nil)
		if err != nil || !done || string(raw) != `{"content":[]}` {
			t.Fatalf("tapped %v: %s, %v, %v", tapped, raw, done, err)
		}
		if n := len(s.drains); n != 0 || !body.closed.Load() {
			t.Errorf("tapped %v: %d drains running, body closed %v; want none and closed", tapped, n, body.closed.Load())
		}
		close(body.unblock)
	}
}

// wireCorpus is what TestDecodeWire* decode: results and messages as
// servers send them, white space, escapes and nesting included.
var wireCorpus = []string{
	`{"content":[{"type":"text","text":"hi"}]}`,
	` { "content" : [ { "type" : "text" , "text" : "a\"b\\c\/d\u00e9\n" } ] , "isError" : false } `,
	`{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"structuredContent":{"b":[1,2.5e3,null,true],"a":{"x":"<&>"}}}`,
	`{"content":[],"structuredContent":null,"_meta":{"toolrouter/cost":{"amount":0.01}}}`,
	`{"content":[{"type":"text","text":"permission denied"}],"isError":true}`,
	`{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}],"resultType":"complete"}`,
	`{"content":[{"type":"text","text":"x","annotations":{"priority":1}}],"unknown":[[[{"deep":[1]}]]]}`,
	`{"jsonrpc":"2.0","id":1099511627777,"result":{"content":[{"type":"text","text":"{\"msg\":\"hi\"}"}],"structuredContent":{"msg":"hi"}}}`,
	`{"jsonrpc":"2.0","id":"s-1","error":{"code":-32602,"message":"unknown tool","data":{"x":1}}}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`,
	`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
	`{"content":[{"type":"text","text":"\ud83d\ude00 \u2028"}]}`,
}

// TestDecodeWireAsEncodingJSON: the hot path's decoder (segmentio's, as
// the SDK's) reads what servers send as encoding/json, which it replaced
// there, reads it: the same results, messages and errors.
func TestDecodeWireAsEncodingJSON(t *testing.T) {
	for _, raw := range wireCorpus {
		var r1, r2 wireResult
		e1, e2 := decodeWire([]byte(raw), &r1), json.Unmarshal([]byte(raw), &r2)
		if (e1 == nil) != (e2 == nil) || !reflect.DeepEqual(r1, r2) {
			t.Errorf("%s: result %+v (%v), encoding/json %+v (%v)", raw, r1, e1, r2, e2)
		}
		var m1, m2 wireMessage
		e1, e2 = decodeWire([]byte(raw), &m1), json.Unmarshal([]byte(raw), &m2)
		if (e1 == nil) != (e2 == nil) || !reflect.DeepEqual(m1, m2) {
			t.Errorf("%s: message %+v (%v), encoding/json %+v (%v)", raw, m1, e1, m2, e2)
		}
	}
	for _, bad := range []string{``, `{`, `{"content":{}}`, `{"content":[]} x`, `{"content":[]}{}`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `"\x"`} {
		var r wireResult
		if err := decodeWire([]byte(bad), &r); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

// TestDecodeWireAsTheSDK: where encoding/json and the SDK's decoder part
// (keys of another case, invalid UTF-8, lone surrogates, nesting past the
// SDK's bound), the hot path reads a result as the SDK's path does.
func TestDecodeWireAsTheSDK(t *testing.T) {
	deep := strings.Repeat("[", maxWireDepth) + strings.Repeat("]", maxWireDepth)
	for _, raw := range append(slices.Clone(wireCorpus[:7]),
		`{"Content":[{"type":"text","text":"a"}],"IsError":true}`,
		`{"content":[{"Type":"text","TEXT":"a"}]}`,
		"{\"content\":[{\"type\":\"text\",\"text\":\"bad \xff\xfe utf-8\"}]}",
		`{"content":[{"type":"text","text":"lone \ud800 surrogate \udc00"}]}`,
		`{"content":[{"type":"text","text":"x"}],"structuredContent":{"d":`+deep+`}}`,
		`{"content":[{"type":"text","text":"x"}],"structuredContent":{"d":[`+deep+`]}}`,
	) {
		var got wireResult
		gotErr := decodeWire([]byte(raw), &got)
		if _, _, err := fastOutcome(nil, json.RawMessage(raw)); err != nil && gotErr == nil {
			gotErr = err // content other than text: read by the SDK's decoder
		}
		var sdk mcp.CallToolResult
		sdkErr := json.Unmarshal([]byte(raw), &sdk)
		if (gotErr == nil) != (sdkErr == nil) {
			t.Errorf("%.80s: error %v, the SDK's %v", raw, gotErr, sdkErr)
			continue
		}
		if gotErr != nil {
			continue
		}
		if string(got.StructuredContent) == "null" {
			got.StructuredContent = nil // fastOutcome's reading, as the SDK's
		}
		var texts, sdkTexts []string
		for _, c := range got.Content {
			if c.Type == "text" {
				texts = append(texts, c.Text)
			}
		}
		for _, c := range sdk.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				sdkTexts = append(sdkTexts, tc.Text)
			}
		}
		if got.IsError != sdk.IsError || !slices.Equal(texts, sdkTexts) || len(got.Content) != len(sdk.Content) ||
			(got.StructuredContent != nil) != (sdk.StructuredContent != nil) {
			t.Errorf("%.80s: %+v, the SDK's %+v", raw, got, sdk)
		}
	}
}

// TestEncodeCallAsEncodingJSON: a tools/call request is the bytes
// encoding/json makes of it (HTML escaped in arguments and strings, U+2028
// and U+2029 too, map keys sorted, raw arguments compacted), made by
// segmentio's encoder.
func TestEncodeCallAsEncodingJSON(t *testing.T) {
	for i, p := range []*mcp.CallToolParams{
		{Name: "echo", Arguments: json.RawMessage(`{"msg":"hi"}`)},
		{Name: "echo", Arguments: json.RawMessage(" { \"a\" : [1, 2.50, 1e3, -0, \"<b>&amp;</b> \u2028\u2029\"] } ")},
		{Name: "echo", Arguments: json.RawMessage("{\"raw\":\"\xe2\x80\xa8 \xff bad\"}")},
		{Name: "e<&>", Arguments: map[string]any{"z": "<>&", "a": "\u2028\xff", "m": map[string]any{"b": 1, "a": []any{true, nil, 1.5, 1e21}}}},
		{Name: "echo", Arguments: map[string]any{}, Meta: mcp.Meta{"progressToken": "toolrouterd-7", "io.modelcontextprotocol/logLevel": "debug"}},
		{Name: "echo", Meta: mcp.Meta{"x<": map[string]any{"b": 2, "a": "\u2029"}}, RequestState: "s&t",
			InputResponses: mcp.InputResponseMap{"r1": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"n": 1}}}},
	} {
		id := fastIDBase + int64(i)
		got, err := encodeCall(id, p)
		want, wantErr := json.Marshal(callRequest{JSONRPC: "2.0", ID: id, Method: "tools/call", Params: p})
		if string(got) != string(want) || err != nil || wantErr != nil {
			t.Errorf("case %d:\n got %s (%v)\nwant %s (%v)", i, got, err, want, wantErr)
		}
	}
}

// blockedEnd is a stream body whose last read returns io.EOF with its
// last bytes, as net/http's does when the end of a chunked stream came
// with them, and which blocks on any read past that (a drain would hang
// on it). It says nothing of its end (no Ended).
type blockedEnd struct {
	r       *strings.Reader
	unblock chan struct{}
	closed  atomic.Bool
}

func (b *blockedEnd) Read(p []byte) (int, error) {
	if b.r.Len() == 0 {
		<-b.unblock
		return 0, io.EOF
	}
	n, _ := b.r.Read(p)
	if b.r.Len() == 0 {
		return n, io.EOF
	}
	return n, nil
}

func (b *blockedEnd) Close() error { b.closed.Store(true); return nil }

// TestMCPStreamReadToItsEndNotDrained: a call's stream whose body gave
// io.EOF with the response (net/http's body, whose connection is then
// back in its pool) is closed by the call itself, without a background
// drain (a goroutine and a timer per call).
func TestMCPStreamReadToItsEndNotDrained(t *testing.T) {
	body := &blockedEnd{
		r:       strings.NewReader("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[]}}\n\n"),
		unblock: make(chan struct{}),
	}
	defer close(body.unblock)
	s := &server{drains: make(chan struct{}, maxDrains)}
	p := sseParser{r: bufio.NewReader(nil)}
	raw, done, err := s.drainStream(context.Background(), fastSession{}, []byte("7"), &http.Response{Body: body}, &p, nil)
	if err != nil || !done || string(raw) != `{"content":[]}` {
		t.Fatalf("%s, %v, %v", raw, done, err)
	}
	if n := len(s.drains); n != 0 || !body.closed.Load() {
		t.Errorf("%d drains running, body closed %v; want none and closed", n, body.closed.Load())
	}
}

// TestMCPPostHeaderPerSession: the hot path's POST header is the
// session's (a new session gets its own, never the last one's) with the
// server's headers, a copy each time (a credential set on one request
// stays off the next), made in three allocations at most.
func TestMCPPostHeaderPerSession(t *testing.T) {
	s := &server{transport: &serverTransport{headers: map[string]string{"X-Api-Key": "k"}}}
	for _, sess := range []fastSession{{id: "s1", version: "2025-11-25"}, {id: "s2", version: "2025-11-25"}, {id: "s2", version: "2025-06-18"}, {id: "", version: "2025-06-18"}} {
		want := sess.header(postAccept)
		want["Content-Type"] = []string{"application/json"}
		want["X-Api-Key"] = []string{"k"}
		want["User-Agent"] = []string{userAgent}
		for range 2 {
			h := s.postHeader(sess)
			if !reflect.DeepEqual(h, want) {
				t.Errorf("session %+v: header %v, want %v", sess, h, want)
			}
			h.Set("Authorization", "Bearer alice")
		}
		if n := testing.AllocsPerRun(20, func() { _ = s.postHeader(sess) }); n > 3 {
			t.Errorf("session %+v: %v allocations per header, want 3 at most", sess, n)
		}
	}
}
