package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Keys stores Idempotency-Keys (the store).
type Keys interface {
	ClaimKey(ctx context.Context, key, fingerprint string, ttl time.Duration) (toolrouter.Claim, error)
	CompleteKey(ctx context.Context, key string, response []byte, ttl time.Duration) error
	ReleaseKey(ctx context.Context, key string) error
	RenewKey(ctx context.Context, key string, lease time.Duration) error
}

// keyLease is how long a claimed key stays in progress without its
// request renewing it (every keyLease/3 while it runs): a request whose
// replica died frees its key seconds later, as Abandoned, never to run
// again (docs/operations.md "Storage and durability").
const keyLease = 10 * time.Second

// keyWait is how long a request waits for another request holding the same
// key before answering 409. It is longer than keyLease, so that a retry of
// a request whose replica died gets its outcome, not a 409.
const keyWait = 30 * time.Second

// storedResponse is an answered request, kept under its key. Location is
// part of the answer (a 202 for a call held for approval names the
// approval in it), so a replay sends it too.
type storedResponse struct {
	Status      int    `json:"status"`
	ContentType string `json:"content_type"`
	Location    string `json:"location,omitempty"`
	Body        []byte `json:"body"`
}

// idempotency makes requests carrying an Idempotency-Key run once: a
// repeat gets the stored answer with Idempotent-Replayed: true, from any
// replica sharing the store; a repeat arriving while the first is still
// running waits for it (409 after keyWait); the same key with a different
// body is 422. The answer is stored before it is sent; a request whose
// answer could not be stored is answered 503, and its key is then
// reported (never run again) by abandonedAnswer.
func idempotency(keys Keys, ttl, lease time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key := r.Header.Get("Idempotency-Key")
			if key == "" {
				next.ServeHTTP(w, r)
				return
			}
			if !validRequestID(key) || len(key) > 255 {
				writeProblem(w, r, http.StatusBadRequest, "Idempotency-Key", "Idempotency-Key: must be 1 to 255 visible ASCII characters")
				return
			}
			sum := sha256.New()
			// The query is part of the request (?server= picks the view a
			// call runs in): the same key with another one is another
			// request. Without one the fingerprint is as it was before the
			// query counted, so a retry across that upgrade still replays.
			target := r.URL.Path
			if r.URL.RawQuery != "" {
				target += "?" + r.URL.RawQuery
			}
			sum.Write([]byte(r.Method + " " + target + " " + r.Header.Get("Accept") + "\n"))
			sum.Write(rawBody(r))
			fp := hex.EncodeToString(sum.Sum(nil))
			// Keys belong to their client (docs/security.md "Clients"): one client
			// can neither replay nor block another's answers by reusing
			// its key. And to their user (docs/backend-auth.md): an answer
			// made with one user's backend credential is never replayed to
			// another user of the same client, on any replica.
			scope := access.FromContext(r.Context()).LabelName()
			if u := access.UserFromContext(r.Context()); u != nil && u.Subject != "" {
				scope = toolrouter.ScopedKey(scope, "user:"+u.Subject)
			}
			key = toolrouter.ScopedKey(scope, key)
			ctx := r.Context()
			deadline := time.Now().Add(keyWait)
			for {
				claim, err := keys.ClaimKey(ctx, key, fp, lease)
				if err != nil {
					writeError(w, r, toolrouter.StoreError(err))
					return
				}
				switch claim.State {
				case toolrouter.Answered:
					replay(w, r, claim.Response)
					return
				case toolrouter.Claimed:
					runClaimed(w, r, next, keys, key, ttl, lease)
					return
				case toolrouter.Abandoned:
					b := abandonedAnswer(r)
					if err := keys.CompleteKey(ctx, key, b, ttl); err != nil {
						zerolog.Ctx(ctx).Warn().Err(err).Msg("store the answer of an abandoned idempotency key")
					}
					replay(w, r, b)
					return
				}
				if time.Now().After(deadline) {
					writeProblem(w, r, http.StatusConflict, "Idempotency-Key", "Idempotency-Key: a request with this key is still being processed; retry later")
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
		})
	}
}

// abandonedAnswer is the answer kept for a key whose request stopped
// without a stored answer: it may have run its tool, so it is reported
// and not run again.
func abandonedAnswer(r *http.Request) []byte {
	rec := &recorder{header: http.Header{}, buffered: true}
	writeProblem(rec, r, http.StatusConflict, "Idempotency-Key",
		"Idempotency-Key: the request first sent with this key stopped before its answer was stored (the service restarted, or its store failed); its tool may have run, so it is not run again: check the tool's effects, then retry with a new key")
	b, _ := json.Marshal(storedResponse{Status: rec.status, ContentType: rec.header.Get("Content-Type"), Body: rec.body})
	return b
}

// runClaimed serves a request whose key this replica claimed and stores
// its answer, then sends it (streams are sent as they go and stored at
// their end). A server error, or a 429, releases the key so a retry can
// run. When the answer cannot be stored, the client gets a 503 and the
// key stays claimed: its lease lapses and a retry is told the outcome is
// unknown (abandonedAnswer).
//
// The work does not stop when the client hangs up: a client that timed out
// retries with the same key, and must get the tool's real answer (waiting
// for it if need be), not a stored "call cancelled". Tool timeouts bound
// the work.
func runClaimed(w http.ResponseWriter, r *http.Request, next http.Handler, keys Keys, key string, ttl, lease time.Duration) {
	r = r.WithContext(context.WithoutCancel(r.Context()))
	rec := &recorder{ResponseWriter: w, buffered: !wantsEventStream(r)}
	if rec.buffered {
		rec.header = http.Header{}
		for k, v := range w.Header() { // the request id and CORS headers set so far
			rec.header[k] = v
		}
	}
	stop := renewWhileRunning(r.Context(), keys, key, lease)
	done := false
	defer func() {
		if !done { // a panic: free the key, as for a server error
			stop()
			release(r, keys, key)
		}
	}()
	next.ServeHTTP(rec, r)
	stop()
	done = true
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	// A 429 is not the answer to the key: retried after Retry-After, the
	// request must run.
	if rec.status >= statusClientClosed || rec.status == http.StatusTooManyRequests {
		release(r, keys, key)
		rec.send(w)
		return
	}
	// Store even when the client went away: the work was done.
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	b, err := json.Marshal(storedResponse{Status: rec.status, ContentType: rec.Header().Get("Content-Type"), Location: rec.Header().Get("Location"), Body: rec.body})
	if err == nil {
		err = keys.CompleteKey(ctx, key, b, ttl)
	}
	if err != nil {
		zerolog.Ctx(r.Context()).Error().Err(err).Msg("store idempotent response")
		if rec.buffered {
			writeError(w, r, toolrouter.StoreError(err))
			return
		}
	}
	rec.send(w)
}

func release(r *http.Request, keys Keys, key string) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	if err := keys.ReleaseKey(ctx, key); err != nil {
		zerolog.Ctx(r.Context()).Error().Err(err).Msg("release idempotency key")
	}
}

// renewWhileRunning renews a claimed key's lease every third of it until
// stopped: the heartbeat of the request holding the key.
func renewWhileRunning(ctx context.Context, keys Keys, key string, lease time.Duration) (stop func()) {
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(lease / 3)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				if err := keys.RenewKey(ctx, key, lease); err != nil {
					zerolog.Ctx(ctx).Warn().Err(err).Msg("renew idempotency key")
				}
			}
		}
	}()
	return func() { close(quit); <-finished }
}

func replay(w http.ResponseWriter, r *http.Request, stored []byte) {
	var s storedResponse
	if err := json.Unmarshal(stored, &s); err != nil {
		writeError(w, r, errors.New("stored idempotent response is corrupt: "+err.Error()))
		return
	}
	if s.ContentType != "" {
		w.Header().Set("Content-Type", s.ContentType)
	}
	if s.Location != "" {
		w.Header().Set("Location", s.Location)
	}
	w.Header().Set("Idempotent-Replayed", "true")
	w.WriteHeader(s.Status)
	_, _ = w.Write(s.Body)
}

// recorder keeps a copy of a response: buffered, it holds it (headers
// included) until send; otherwise it passes it through as it goes.
type recorder struct {
	http.ResponseWriter
	buffered bool
	header   http.Header // buffered only
	status   int
	body     []byte
}

func (r *recorder) Header() http.Header {
	if r.buffered {
		return r.header
	}
	return r.ResponseWriter.Header()
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	if !r.buffered {
		r.ResponseWriter.WriteHeader(code)
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.body = append(r.body, b...)
	if r.buffered {
		return len(b), nil
	}
	return r.ResponseWriter.Write(b)
}

// send writes a buffered response to w.
func (r *recorder) send(w http.ResponseWriter) {
	if !r.buffered {
		return
	}
	h := w.Header()
	for k, v := range r.header {
		h[k] = v
	}
	w.WriteHeader(r.status)
	_, _ = w.Write(r.body)
}

// Unwrap lets http.ResponseController reach Flush (SSE) and write
// deadlines.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
