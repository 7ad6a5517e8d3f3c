package mcpclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

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
