package mcpclient

import (
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
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
