package httpapi

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// heartbeat is how often an idle stream sends a comment line, so proxies
// and clients keep it open.
const heartbeat = 15 * time.Second

// sseWriteTimeout bounds one event's write to a client that stopped reading.
const sseWriteTimeout = 10 * time.Second

// sse writes Server-Sent Events. send may be called from one goroutine while
// the heartbeat runs in another.
type sse struct {
	mu     sync.Mutex
	closed bool // the handler is returning: w must not be touched again
	w      http.ResponseWriter
	rc     *http.ResponseController
	log    *zerolog.Logger
	stop   chan struct{}
	done   sync.WaitGroup
}

func startSSE(w http.ResponseWriter, r *http.Request) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sse{w: w, rc: http.NewResponseController(w), log: zerolog.Ctx(r.Context()), stop: make(chan struct{})}
	_ = s.rc.Flush()
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		t := time.NewTicker(heartbeat)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-r.Context().Done():
				return
			case <-t.C:
				s.mu.Lock()
				if !s.closed {
					_ = s.rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
					_, _ = s.w.Write([]byte(": ping\n\n"))
					_ = s.rc.Flush()
				}
				s.mu.Unlock()
			}
		}
	}()
	return s
}

func (s *sse) send(event string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		s.log.Error().Err(err).Str("event", event).Msg("encode SSE event")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		// A late event (a progress notification arriving after the call
		// returned): the response is finished, and writing to it after the
		// handler returned would corrupt another response or crash.
		return
	}
	buf := make([]byte, 0, len(data)+len(event)+16)
	buf = append(buf, "event: "...)
	buf = append(buf, event...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	// A client that stops reading must not stall the sender (a tool call,
	// an MCP session's progress): the write gives up after sseWriteTimeout.
	_ = s.rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
	if _, err := s.w.Write(buf); err != nil {
		return
	}
	_ = s.rc.Flush()
}

// close ends the stream: later sends are dropped. It is called before the
// handler returns.
func (s *sse) close() {
	s.mu.Lock()
	s.closed = true
	// The connection may serve another request next: no deadline left over.
	_ = s.rc.SetWriteDeadline(time.Time{})
	s.mu.Unlock()
	close(s.stop)
	s.done.Wait()
}
