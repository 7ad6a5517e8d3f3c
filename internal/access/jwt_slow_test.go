package access_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/access"
)

// A token with an unknown kid makes the verifier fetch the key set; with a
// slow issuer that fetch must stall only the tokens that need it, and many
// such tokens share one fetch (issue 21 item 4: valid tokens took 9.7 s).
func TestJWTSlowIssuerStallsOnlyUnknownKids(t *testing.T) {
	t.Parallel()
	is := newIssuer(t)
	is.addKey("good", true, true)
	is.addKey("forged", true, false)
	var slow atomic.Bool
	gate := make(chan struct{})    // closed to let the slow fetch answer
	started := make(chan struct{}) // receives when a slow fetch arrived
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		if slow.Load() {
			started <- struct{}{}
			<-gate
		}
		is.srv.Config.Handler.ServeHTTP(w, r)
	}))
	defer srv.Close()
	defer func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	}()
	now := time.Now()
	clock := now
	var clockMu sync.Mutex
	v := access.NewJWTVerifier(access.JWTConfig{
		Issuer: "iss", JWKSURL: srv.URL, Audience: "aud", MinRefresh: time.Minute,
		Now: func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return clock },
	})
	claims := map[string]any{"iss": "iss", "aud": "aud", "sub": "bot", "exp": now.Add(2 * time.Hour).Unix()}
	valid, forged := is.token("good", claims), is.token("forged", claims)
	ctx := context.Background()
	if _, err := v.Verify(ctx, valid); err != nil {
		t.Fatal(err)
	}
	slow.Store(true)
	clockMu.Lock()
	clock = clock.Add(time.Minute) // past MinRefresh: an unknown kid may refetch
	clockMu.Unlock()

	const forgers = 8
	errs := make(chan error, forgers)
	go func() {
		_, err := v.Verify(ctx, forged)
		errs <- err
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the unknown kid did not fetch the key set")
	}
	for range forgers - 1 {
		go func() {
			_, err := v.Verify(ctx, forged)
			errs <- err
		}()
	}
	// The fetch hangs; a valid token does not wait for it.
	var slowest time.Duration
	defer func() { t.Logf("slowest valid token behind the hanging fetch: %s", slowest) }()
	for range 20 {
		vctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		begin := time.Now()
		_, err := v.Verify(vctx, valid)
		cancel()
		took := time.Since(begin)
		slowest = max(slowest, took)
		if err != nil || took > time.Second {
			t.Fatalf("valid token behind a slow issuer: %v after %s", err, took)
		}
	}
	// A waiting forger gives up with its own context.
	wctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := v.Verify(wctx, forged); err == nil || access.IsDenied(err) {
		t.Errorf("forged token with a cancelled context: %v", err)
	}
	close(gate)
	for range forgers {
		if err := <-errs; !access.IsDenied(err) || !strings.Contains(err.Error(), "unknown key") {
			t.Errorf("forged token: %v", err)
		}
	}
	if n := fetches.Load(); n != 2 {
		t.Errorf("JWKS fetched %d times, want 2 (first use, then one for %d forged tokens)", n, forgers)
	}
	// Within MinRefresh of that fetch, unknown kids fetch nothing.
	slow.Store(false)
	for range 5 {
		if _, err := v.Verify(ctx, forged); !access.IsDenied(err) {
			t.Errorf("forged token: %v", err)
		}
	}
	if n := fetches.Load(); n != 2 {
		t.Errorf("JWKS fetched %d times within MinRefresh", n)
	}
}

// A key set that cannot be fetched (an error status, garbage, too large)
// is logged, and the keys in hand stay in use.
func TestJWKSFetchFailuresLogged(t *testing.T) {
	t.Parallel()
	is := newIssuer(t)
	is.addKey("good", true, true)
	is.addKey("forged", true, false)
	var mode atomic.Value
	mode.Store("ok")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch mode.Load() {
		case "500":
			http.Error(w, "boom", 500)
		case "garbage":
			_, _ = w.Write([]byte("<html>not json"))
		case "huge":
			_, _ = w.Write([]byte(`{"keys":[` + strings.Repeat(`{},`, 1<<19) + `{}]}`))
		default:
			is.srv.Config.Handler.ServeHTTP(w, r)
		}
	}))
	defer srv.Close()
	var buf syncBuffer
	log := zerolog.New(&buf)
	now := time.Now()
	clock := now
	var clockMu sync.Mutex
	v := access.NewJWTVerifier(access.JWTConfig{
		Issuer: "iss", JWKSURL: srv.URL, Audience: "aud", MinRefresh: time.Minute, Log: &log,
		Now: func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return clock },
	})
	claims := map[string]any{"iss": "iss", "aud": "aud", "sub": "bot", "exp": now.Add(time.Hour).Unix()}
	ctx := context.Background()
	if _, err := v.Verify(ctx, is.token("good", claims)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ mode, want string }{
		{"500", "status 500"}, {"garbage", "invalid character"}, {"huge", "larger than"},
	} {
		mode.Store(tc.mode)
		clockMu.Lock()
		clock = clock.Add(time.Minute)
		clockMu.Unlock()
		if _, err := v.Verify(ctx, is.token("forged", claims)); !access.IsDenied(err) {
			t.Errorf("%s: forged token: %v", tc.mode, err)
		}
		if _, err := v.Verify(ctx, is.token("good", claims)); err != nil {
			t.Errorf("%s: the keys in hand stay in use: %v", tc.mode, err)
		}
		if line := buf.String(); !strings.Contains(line, "JWT key set fetch failed") || !strings.Contains(line, tc.want) || !strings.Contains(line, `"level":"warn"`) {
			t.Errorf("%s: log %q, want a warning with %q", tc.mode, line, tc.want)
		}
		buf.Reset()
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
func (s *syncBuffer) Reset()         { s.mu.Lock(); defer s.mu.Unlock(); s.b.Reset() }
