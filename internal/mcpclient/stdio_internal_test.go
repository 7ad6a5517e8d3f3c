package mcpclient

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// floodReader is a pipe a server floods: each Read returns as many short
// lines as fit, up to lines in all, then EOF.
type floodReader struct {
	lines, reads, smallest int
}

func (f *floodReader) Read(p []byte) (int, error) {
	const line = "flood flood flood\n"
	if f.lines == 0 {
		return 0, io.EOF
	}
	if f.reads == 0 || len(p) < f.smallest {
		f.smallest = len(p)
	}
	f.reads++
	n := 0
	for f.lines > 0 && n+len(line) <= len(p) {
		n += copy(p[n:], line)
		f.lines--
	}
	return n, nil
}

// TestStderrFloodDrainsCheaply: a flooded stderr is read in large reads,
// the lines over 50 a second are counted and dropped, and once they are
// spent the drain pauses after each read (issue 21, item 15), so a flood
// costs a read per pause, not one per line. The clock and the pause are
// fakes: a pause moves the clock.
func TestStderrFloodDrainsCheaply(t *testing.T) {
	var logs bytes.Buffer
	clock := time.Unix(0, 0)
	l := newLineLog(zerolog.New(&logs), func() time.Time { return clock })
	var paused time.Duration
	l.sleep = func(d time.Duration) { paused += d; clock = clock.Add(d) }
	f := &floodReader{lines: 1_000_000}
	if _, err := io.Copy(l, f); err != nil {
		t.Fatal(err)
	}
	if f.smallest < 64<<10 {
		t.Errorf("stderr read %d bytes at a time, want 64 KiB", f.smallest)
	}
	if paused != time.Duration(f.reads)*drainPause {
		t.Errorf("paused %s over %d reads, want %s after each (every read found the second's lines spent)", paused, f.reads, drainPause)
	}
	logged, dropped := strings.Count(logs.String(), `"message":"flood flood flood"`), 0
	for _, line := range strings.Split(logs.String(), "\n") {
		var l struct{ Dropped int }
		if json.Unmarshal([]byte(line), &l) == nil {
			dropped += l.Dropped
		}
	}
	seconds := int(paused/time.Second) + 1
	if logged > stderrLinesPerSecond*seconds || logged+dropped > 1_000_000 || dropped == 0 {
		t.Errorf("logged %d lines and %d dropped over %d s of fake time, want at most %d a second", logged, dropped, seconds, stderrLinesPerSecond)
	}
}
