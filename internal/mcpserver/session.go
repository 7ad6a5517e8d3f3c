package mcpserver

import (
	"net/http"
	"sync"

	"github.com/toolrouterd/toolrouterd/internal/access"
)

// sessionOwners maps each open MCP session to the client that opened it
// (README "Clients", isolation): another client's requests on it are
// answered like an unknown session's, and each client has its own cap.
type sessionOwners struct {
	mu    sync.Mutex
	owner map[string]string // session id → client name
}

// ownSession checks a request of client c against the session it names:
// one of c's sessions passes; any other is answered 404, as the SDK
// answers a session it does not know, and ok is false. A request opening
// a session (POST without Mcp-Session-Id) is held to c's cap, and the
// returned writer records the new session as c's before its id is sent.
func (h *Handler) ownSession(w http.ResponseWriter, r *http.Request, c *access.Client) (_ http.ResponseWriter, ok bool) {
	o := &h.owners
	if id := r.Header.Get("Mcp-Session-Id"); id != "" {
		o.mu.Lock()
		owner, known := o.owner[id]
		if known && r.Method == http.MethodDelete && owner == c.Name {
			delete(o.owner, id) // the SDK closes it
		}
		o.mu.Unlock()
		if !known || owner != c.Name {
			http.Error(w, "session not found", http.StatusNotFound)
			return w, false
		}
		return w, true
	}
	if r.Method != http.MethodPost {
		return w, true // the SDK answers a GET or DELETE without a session
	}
	if h.openSessions(c.Name) >= h.d.MaxSessions {
		w.Header().Set("Retry-After", "5")
		http.Error(w, "too many MCP sessions open for this client; retry later", http.StatusServiceUnavailable)
		return w, false
	}
	return &sessionRecorder{ResponseWriter: w, o: o, client: c.Name}, true
}

// openSessions counts the open sessions of a client, forgetting the
// owners of sessions that ended (closed, or timed out).
func (h *Handler) openSessions(client string) int {
	open := map[string]bool{}
	for ss := range h.srv.Sessions() {
		open[ss.ID()] = true
	}
	o := &h.owners
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for id, owner := range o.owner {
		switch {
		case !open[id]:
			delete(o.owner, id)
		case owner == client:
			n++
		}
	}
	return n
}

// sessionRecorder records the session id of a response to its client
// before the response's header is written.
type sessionRecorder struct {
	http.ResponseWriter
	o      *sessionOwners
	client string
	done   bool
}

func (s *sessionRecorder) record() {
	if s.done {
		return
	}
	s.done = true
	if id := s.Header().Get("Mcp-Session-Id"); id != "" {
		s.o.mu.Lock()
		if s.o.owner == nil {
			s.o.owner = map[string]string{}
		}
		s.o.owner[id] = s.client
		s.o.mu.Unlock()
	}
}

func (s *sessionRecorder) WriteHeader(code int) {
	s.record()
	s.ResponseWriter.WriteHeader(code)
}

func (s *sessionRecorder) Write(b []byte) (int, error) {
	s.record()
	return s.ResponseWriter.Write(b)
}

func (s *sessionRecorder) Flush() {
	s.record()
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (s *sessionRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
