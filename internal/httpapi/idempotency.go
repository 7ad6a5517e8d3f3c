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

// keyLease bounds how long a claimed key stays in progress: a replica that
// dies mid-request frees its keys after it.
const keyLease = 15 * time.Minute

// keyWait is how long a request waits for another request holding the same
// key before answering 409.
const keyWait = 30 * time.Second

// storedResponse is an answered request, kept under its key.
type storedResponse struct {
	Status      int    `json:"status"`
	ContentType string `json:"content_type"`
	Body        []byte `json:"body"`
}

// idempotency makes requests carrying an Idempotency-Key run once: a
// repeat gets the stored answer with Idempotent-Replayed: true, from any
// replica sharing the store; a repeat arriving while the first is still
// running waits for it (409 after keyWait); the same key with a different
// body is 422.
func idempotency(keys Keys, ttl time.Duration) func(http.Handler) http.Handler {
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
			sum.Write([]byte(r.Method + " " + r.URL.Path + " " + r.Header.Get("Accept") + "\n"))
			sum.Write(rawBody(r))
			fp := hex.EncodeToString(sum.Sum(nil))
			// Keys belong to their client (README "Clients"): one client
			// can neither replay nor block another's answers by reusing
			// its key.
			key = toolrouter.ScopedKey(access.FromContext(r.Context()).LabelName(), key)
			ctx := r.Context()
			deadline := time.Now().Add(keyWait)
			for {
				claim, err := keys.ClaimKey(ctx, key, fp, keyLease)
				if err != nil {
					writeError(w, r, toolrouter.StoreError(err))
					return
				}
				switch claim.State {
				case toolrouter.Answered:
					replay(w, r, claim.Response)
					return
				case toolrouter.Claimed:
					runClaimed(w, r, next, keys, key, ttl)
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

// runClaimed serves a request whose key this replica claimed and stores
// its answer; a server error releases the key so a retry can run.
//
// The work does not stop when the client hangs up: a client that timed out
// retries with the same key, and must get the tool's real answer (waiting
// for it if need be), not a stored "call cancelled". Tool timeouts bound
// the work.
func runClaimed(w http.ResponseWriter, r *http.Request, next http.Handler, keys Keys, key string, ttl time.Duration) {
	r = r.WithContext(context.WithoutCancel(r.Context()))
	rec := &recorder{ResponseWriter: w}
	done := false
	defer func() {
		// Store even when the client went away: the work was done.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
		defer cancel()
		log := zerolog.Ctx(r.Context())
		// A 429 is not the answer to the key: retried after Retry-After,
		// the request must run.
		if !done || rec.status >= statusClientClosed || rec.status == http.StatusTooManyRequests {
			if err := keys.ReleaseKey(ctx, key); err != nil {
				log.Error().Err(err).Msg("release idempotency key")
			}
			return
		}
		b, err := json.Marshal(storedResponse{Status: rec.status, ContentType: rec.Header().Get("Content-Type"), Body: rec.body})
		if err == nil {
			err = keys.CompleteKey(ctx, key, b, ttl)
		}
		if err != nil {
			log.Error().Err(err).Msg("store idempotent response")
		}
	}()
	stop := renewWhileRunning(r.Context(), keys, key)
	next.ServeHTTP(rec, r)
	stop()
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	done = true
}

// renewWhileRunning renews a claimed key's lease every third of it until
// stopped, so a request longer than keyLease keeps its key.
func renewWhileRunning(ctx context.Context, keys Keys, key string) (stop func()) {
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(keyLease / 3)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				if err := keys.RenewKey(ctx, key, keyLease); err != nil {
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
	w.Header().Set("Idempotent-Replayed", "true")
	w.WriteHeader(s.Status)
	_, _ = w.Write(s.Body)
}

// recorder passes a response through while keeping a copy.
type recorder struct {
	http.ResponseWriter
	status int
	body   []byte
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.body = append(r.body, b...)
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush (SSE).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
