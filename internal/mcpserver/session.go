package mcpserver

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
)

// Sessions across replicas (docs/mcp.md "MCP behind a load balancer").
//
// The SDK keeps a session in the memory of the replica that answered its
// initialize. So that a session client works whichever replica each of its
// requests reaches, with no sticky routing and no shared session table:
//
//   - The Mcp-Session-Id a client gets is a self-describing token,
//     "<id>.<client>": the SDK's random id of the session (base32) and the
//     name of the client that opened it (base64url; just "<id>" on an open
//     service). sessionWriter puts it on every response in place of the
//     SDK's id.
//   - A request with a token for a session this replica holds goes to that
//     session (its GET stream, notifications and log level included). A
//     token this replica does not hold is served by a stateless handler,
//     exactly as its own replica would answer tools/list, tools/call and
//     ping; GET (no stream to resume here) answers 405, as the streamable
//     HTTP transport allows.
//   - DELETE terminates a session on any replica: the token is marked
//     ended in the store (Deps.Marks, for Deps.EndedTTL), and every
//     replica answers 404 to it from then on; the replica holding the
//     session closes it (at once, or on its next request).
//   - A token is accepted only from the client it names, and a session
//     this replica holds only from the client that opened it; from any
//     other client (or malformed) it is answered 404 "session not found",
//     as for an unknown session, so a client cannot use another client's
//     session (not even by re-suffixing its id with its own name). A
//     replica that does not hold the session has no state of it to give.
//   - Each client may hold MaxSessions sessions on a replica (sessionOwners
//     counts them), so one client cannot lock the others out.
//   - The token is not signed: it grants nothing a client could not ask
//     for anyway. Its only effect on routing is the default plan id,
//     SessionPlanID(token) ("mcp-" + a digest of the token, so the token
//     itself never reaches a tool or a log), which any client may also choose with
//     _meta.toolrouter/plan_id, and the client part must match the caller
//     authenticated by its API key.
//
// Calls read the token from sessionHeader, which ServeHTTP sets on the
// request (after removing any the client sent) for both handlers: the plan
// of a session's calls is the same on every replica, so its sequence
// (shared through the store) and tool_call_ids are too.

// sessionHeader carries a verified session token from ServeHTTP to the
// method handlers (mcp.RequestExtra.Header). Clients cannot set it.
const sessionHeader = "X-Toolrouter-Mcp-Session"

// sessionToken is the Mcp-Session-Id of session id for client (the
// client's name, "" on an open service).
func sessionToken(id, client string) string {
	if client == "" {
		return id
	}
	return id + "." + base64.RawURLEncoding.EncodeToString([]byte(client))
}

// parseSessionToken returns the SDK session id of tok, when tok is well
// formed and names client.
func parseSessionToken(tok, client string) (id string, ok bool) {
	id, enc, hasClient := strings.Cut(tok, ".")
	if id == "" || len(id) > 64 || strings.TrimLeft(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") != "" {
		return "", false
	}
	name := ""
	if hasClient {
		b, err := base64.RawURLEncoding.DecodeString(enc)
		if err != nil || len(b) == 0 {
			return "", false
		}
		name = string(b)
	}
	return id, name == client
}

// sessionOwners maps the sessions this replica holds to the client that
// opened each, and counts the initialize requests being answered, for the
// per-client cap.
type sessionOwners struct {
	mu      sync.Mutex
	owner   map[string]string // SDK session id → client name
	pending map[string]int    // client name → new sessions being opened
}

// record records the owner of a session, in place of its reservation
// when reserved (at once: the session is never counted twice).
func (o *sessionOwners) record(id, client string, reserved bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.owner == nil {
		o.owner = map[string]string{}
	}
	o.owner[id] = client
	if reserved {
		o.unreserve(client)
	}
}

// owns reports whether client opened the session id held on this replica.
func (o *sessionOwners) owns(id, client string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	owner, ok := o.owner[id]
	return ok && owner == client
}

// reserve counts a new session of client against the cap: false when the
// client holds max sessions, open or being opened; otherwise the request's
// sessionWriter holds the reservation (reserved) until it records the
// session or ends.
// Sessions that ended (closed, timed out) are forgotten first, from a list
// of the SDK's sessions taken under the lock: the SDK holds a session
// before its id is answered and recorded, so a session recorded meanwhile
// is never mistaken for one that ended.
func (h *Handler) reserve(client string, max int) bool {
	o := &h.owners
	o.mu.Lock()
	defer o.mu.Unlock()
	open := map[string]bool{}
	for ss := range h.srv.Sessions() {
		open[ss.ID()] = true
	}
	n := o.pending[client]
	for id, owner := range o.owner {
		switch {
		case !open[id]:
			delete(o.owner, id)
		case owner == client:
			n++
		}
	}
	if n >= max {
		return false
	}
	if o.pending == nil {
		o.pending = map[string]int{}
	}
	o.pending[client]++
	return true
}

// release ends a reservation of client that opened no session.
func (o *sessionOwners) release(client string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.unreserve(client)
}

// unreserve ends a reservation of client; o.mu is held.
func (o *sessionOwners) unreserve(client string) {
	if o.pending[client]--; o.pending[client] <= 0 {
		delete(o.pending, client)
	}
}

// sessionWriter replaces the SDK's session id by the session's token in
// the Mcp-Session-Id header of a response, recording a new session's owner
// first (fix; ServeHTTP calls it too, for an answer never written).
type sessionWriter struct {
	http.ResponseWriter
	owners   *sessionOwners
	client   string
	done     bool
	reserved bool // holds a reservation of a new session (reserve)
}

func (s *sessionWriter) fix() {
	if s.done {
		return
	}
	s.done = true
	if id := s.Header().Get(sessionIDHeader); id != "" {
		s.owners.record(id, s.client, s.reserved)
		s.reserved = false
		s.Header().Set(sessionIDHeader, sessionToken(id, s.client))
	}
}

// end records the session of an answer never written, or releases the
// reservation of a request that opened none.
func (s *sessionWriter) end() {
	s.fix()
	if s.reserved {
		s.owners.release(s.client)
		s.reserved = false
	}
}

func (s *sessionWriter) WriteHeader(status int) {
	s.fix()
	s.ResponseWriter.WriteHeader(status)
}

func (s *sessionWriter) Write(b []byte) (int, error) {
	s.fix()
	return s.ResponseWriter.Write(b)
}

// Flush flushes a streamed (SSE) answer.
func (s *sessionWriter) Flush() {
	s.fix()
	http.NewResponseController(s.ResponseWriter).Flush() //nolint:errcheck // best effort, like http.Flusher
}

// Unwrap lets http.ResponseController reach the connection.
func (s *sessionWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

const sessionIDHeader = "Mcp-Session-Id"

// session is the session of SDK id this replica holds, nil when none.
func (h *Handler) session(id string) *mcp.ServerSession {
	for ss := range h.srv.Sessions() {
		if ss.ID() == id {
			return ss
		}
	}
	return nil
}

// endedKey is the store mark (Deps.Marks) of a terminated session token.
func endedKey(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return "mcp-session-ended:" + hex.EncodeToString(sum[:])
}

// routeSession picks the handler of a request of the session era (not
// 2026-07-28) and prepares the request for it: see the comment above. It
// returns nil after answering itself: a bad or terminated token, or a
// DELETE of a session another replica holds.
func (h *Handler) routeSession(w http.ResponseWriter, r *http.Request, client string) (*sessionWriter, *http.Request, http.Handler) {
	r2 := r.Clone(r.Context()) // the headers change; the body is shared
	r2.Header.Del(sessionHeader)
	sw := &sessionWriter{ResponseWriter: w, owners: &h.owners, client: client}
	tok := r.Header.Get(sessionIDHeader)
	if tok == "" {
		return sw, r2, h.http
	}
	id, ok := parseSessionToken(tok, client)
	if !ok {
		writeProblem(w, http.StatusNotFound, "session not found")
		return nil, nil, nil
	}
	ss := h.session(id)
	// The token's client part is the caller's own by now; a session held
	// here must be too, or a client could re-suffix another's session id.
	if ss != nil && !h.owners.owns(id, client) {
		writeProblem(w, http.StatusNotFound, "session not found")
		return nil, nil, nil
	}
	// A terminated session is 404 on every replica (the transport's
	// MUST), for Deps.EndedTTL.
	_, ended, err := h.d.Marks.GetMark(r.Context(), endedKey(tok))
	if err == nil && r.Method == http.MethodDelete && !ended {
		_, err = h.d.Marks.PutMark(r.Context(), endedKey(tok), "1", time.Now().Add(h.d.EndedTTL))
	}
	switch {
	case err != nil:
		h.lim.Event(&h.d.Logger, zerolog.ErrorLevel, "MCP session terminations").Err(err).Msg("MCP session terminations")
		w.Header().Set("Retry-After", "1")
		writeProblem(w, http.StatusServiceUnavailable, "store unavailable; retry later")
		return nil, nil, nil
	case ended:
		if ss != nil {
			_ = ss.Close() // terminated through another replica
		}
		writeProblem(w, http.StatusNotFound, "session terminated")
		return nil, nil, nil
	case r.Method == http.MethodDelete && ss == nil:
		w.WriteHeader(http.StatusNoContent) // its replica closes it on its next request
		return nil, nil, nil
	}
	r2.Header.Set(sessionHeader, tok)
	if ss != nil {
		r2.Header.Set(sessionIDHeader, id)
		return sw, r2, h.http
	}
	r2.Header.Del(sessionIDHeader)
	return sw, r2, h.shared
}
