package remote

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"math"
	"mime"
	"strings"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// A tool may answer 2xx with Content-Type text/event-stream (docs/registry.md
// "Reporting progress"): `progress` events, then one `result` (its data is the output,
// as a plain JSON reply's body) or `error` ({"error": "..."}). The framing
// is the WHATWG HTML Living Standard's "Server-sent events" (§9.2, event
// stream interpretation): lines end with CRLF, LF or CR, ":" starts a
// comment, a blank line dispatches the event, `data` lines are joined with
// LF, `id` and `retry` are ignored.

const (
	contentTypeEventStream = "text/event-stream"
	// progressDataLimit bounds the data of a progress or error event; a
	// larger progress event is ignored like a malformed one.
	progressDataLimit = 64 << 10
	// progressMessageLimit bounds a progress message (longer ones are cut).
	progressMessageLimit = errTextLimit
)

// errStreamTooLarge stops reading an event stream longer than the reply
// limit.
var errStreamTooLarge = errors.New("event stream too large")

// errNoResult is a stream that ended without a result or error event.
var errNoResult = errors.New("event stream ended without a result")

// eventStream reports whether a reply's Content-Type is text/event-stream.
func eventStream(ct string) bool {
	if ct == "" {
		return false
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == contentTypeEventStream
}

// streamEnd is how an event stream ended.
type streamEnd struct {
	result   []byte // the result event's data, when it had one
	isResult bool
	errText  string // the error event's message, when it had one
	errJSON  bool   // the error event's data was {"error": …} or {"message": …}
	isError  bool
	// ignored counts the progress events that were not valid (not
	// forwarded).
	ignored int
}

// readEventStream reads an event stream of at most limit bytes up to its
// result or error event, forwarding each valid progress event to progress
// (when not nil) as it arrives. It reads nothing after the result or error
// event. An error is the transport's (the body cut short, the call's
// context done), errStreamTooLarge, or errNoResult when the stream
// ended without a result or error event.
func readEventStream(body io.Reader, limit int64, progress func(progress, total float64, message string)) (streamEnd, error) {
	s := sseReader{r: bufio.NewReaderSize(body, 4096), limit: limit}
	var end streamEnd
	var data []byte
	var event string
	hasData := false
	for {
		line, err := s.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) {
				// A last event not followed by a blank line is not
				// dispatched (the standard discards it).
				err = errNoResult
			}
			return end, err
		}
		if len(line) == 0 {
			// Dispatch.
			if hasData {
				if n := len(data); n > 0 && data[n-1] == '\n' {
					data = data[:n-1]
				}
				switch event {
				case "result":
					end.result, end.isResult = data, true
					return end, nil
				case "error":
					end.errText, end.errJSON = errorText(data, len(data) > progressDataLimit)
					end.isError = true
					return end, nil
				case "progress":
					if !forwardProgress(data, progress) {
						end.ignored++
					}
				}
				// Other event types (and "message") are ignored.
			}
			data, event, hasData = data[:0], "", false
			continue
		}
		if line[0] == ':' {
			continue // comment
		}
		field, value := line, []byte(nil)
		if i := indexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "event":
			event = string(value)
		case "data":
			data = append(data, value...)
			data = append(data, '\n')
			hasData = true
		}
	}
}

// forwardProgress decodes a progress event's data and forwards it; false
// when it is malformed: not a JSON object, too large, progress missing or
// not a finite number, total not a finite number ≥ 0, message not a string.
// A message is cut to progressMessageLimit bytes.
func forwardProgress(data []byte, progress func(progress, total float64, message string)) bool {
	if len(data) > progressDataLimit {
		return false
	}
	var p struct {
		Progress *float64 `json:"progress"`
		Total    *float64 `json:"total"`
		Message  *string  `json:"message"`
	}
	if json.Unmarshal(data, &p) != nil || p.Progress == nil || !finite(*p.Progress) {
		return false
	}
	var total float64
	if p.Total != nil {
		if !finite(*p.Total) || *p.Total < 0 {
			return false
		}
		total = *p.Total
	}
	var msg string
	if p.Message != nil {
		msg = truncate(*p.Message, progressMessageLimit)
	}
	if progress != nil {
		progress(*p.Progress, total, msg)
	}
	return true
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// sseReader reads the lines of an event stream, counting the bytes against
// limit.
type sseReader struct {
	r      *bufio.Reader
	limit  int64
	n      int64 // bytes read
	skipLF bool  // the last line ended with CR: a LF next is part of it
	bom    bool  // the leading BOM, if any, was checked
	line   []byte
}

// readLine returns the next line without its end; the slice is valid until
// the next call. io.EOF mid-line (or before any) ends the stream.
func (s *sseReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		b, err := s.r.ReadByte()
		if err != nil {
			return nil, err
		}
		if s.n++; s.n > s.limit {
			return nil, errStreamTooLarge
		}
		if s.skipLF {
			s.skipLF = false
			if b == '\n' {
				continue
			}
		}
		switch b {
		case '\r':
			s.skipLF = true
			return s.bomless(), nil
		case '\n':
			return s.bomless(), nil
		}
		s.line = append(s.line, b)
	}
}

// bomless strips the UTF-8 BOM the stream may start with.
func (s *sseReader) bomless() []byte {
	if !s.bom {
		s.bom = true
		if strings.HasPrefix(string(s.line), "\uFEFF") {
			return s.line[3:]
		}
	}
	return s.line
}

// streamFailure is the failure an error event reports.
func streamFailure(end streamEnd) toolrouter.Outcome {
	text := end.errText
	if text == "" {
		text = "tool reported an error event without a message"
	}
	cat := toolrouter.ClassifyError(text)
	if cat == toolrouter.CategoryUnknown {
		cat = toolrouter.CategoryExecution
	}
	return toolrouter.Outcome{Err: text, Category: cat, Answered: end.errJSON}
}
