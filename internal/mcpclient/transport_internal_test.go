package mcpclient

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestSSETapSeesEventsBeforeTheReader splits a stream at every byte: each
// event's data reaches the tap before the reader gets the byte that ends
// the event, and the reader gets the stream unchanged.
func TestMCPSSETapSeesEventsBeforeTheReader(t *testing.T) {
	stream := "id: 1\r\ndata: {\"a\":1}\r\n\r\n: comment\n\nevent: message\ndata: first\ndata:second\n\n" +
		"data: " + strings.Repeat("x", maxEventData) + "\n\ndata: last\n\n"
	var events []string
	var readSoFar strings.Builder
	var seenAt []int
	tap := &sseTap{body: io.NopCloser(iotest.OneByteReader(strings.NewReader(stream))), event: func(d []byte) {
		events = append(events, string(d))
		seenAt = append(seenAt, readSoFar.Len())
	}}
	buf := make([]byte, 1)
	for {
		n, err := tap.Read(buf)
		readSoFar.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if readSoFar.String() != stream {
		t.Error("the stream was altered")
	}
	if want := []string{`{"a":1}`, "first\nsecond", "last"}; !slices.Equal(events, want) {
		t.Fatalf("events = %q, want %q", events, want)
	}
	// The first event ends with the blank line at offset 22 (its last
	// byte, '\n', is byte 23): the tap saw it before the reader got it.
	if end := strings.Index(stream, "\r\n\r\n") + 3; seenAt[0] != end {
		t.Errorf("first event seen after %d bytes were read, want %d", seenAt[0], end)
	}
}

// TestMCPHotPathStreamUntapped: the hot path's client reads a call's event
// stream without the progress tap (its parser hands the notifications on
// itself, server.notify), so the stream is parsed once; the SDK's client
// keeps the tap.
func TestMCPHotPathStreamUntapped(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: message\ndata: {}\n\n")
	}))
	defer hs.Close()
	m := New(zerolog.Nop(), nil)
	defer m.Close()
	s := newServer(m, toolrouter.MCPServer{Name: "s", URL: hs.URL})
	for _, c := range []struct {
		client *http.Client
		tapped bool
	}{{s.http, true}, {s.hot, false}} {
		resp, err := c.client.Post(hs.URL, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		_, tapped := resp.Body.(*sseTap)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if tapped != c.tapped {
			t.Errorf("tapped %v, want %v", tapped, c.tapped)
		}
	}
}
