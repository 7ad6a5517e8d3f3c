package llm_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/llm"
)

const secret = "sk-transport-SECRET-42"

// counting serves handler and counts the requests.
func counting(t *testing.T, handler func(n int, w http.ResponseWriter, r *http.Request)) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handler(int(n.Add(1)), w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func send(ctx context.Context, cfg llm.Config, url string) ([]byte, error) {
	h := http.Header{}
	h.Set("Authorization", "Bearer "+cfg.APIKey)
	h.Set("X-Extra", "1")
	return llm.Send(ctx, cfg, "test", url, h, []byte(`{"q":1}`), func(_ int, b []byte) string { return llm.ProviderMessage(b) })
}

func TestSendSuccess(t *testing.T) {
	t.Parallel()
	srv, n := counting(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || string(b) != `{"q":1}` || r.Header.Get("Content-Type") != "application/json" ||
			r.Header.Get("X-Extra") != "1" || r.Header.Get("Authorization") != "Bearer "+secret || r.Header.Get("User-Agent") == "" {
			t.Errorf("request %s %v %s", r.Method, r.Header, b)
		}
		_, _ = io.WriteString(w, `{"ok":true}`)
	})
	// HTTPClient nil: Send builds its own.
	b, err := send(context.Background(), llm.Config{APIKey: secret}, srv.URL)
	if err != nil || string(b) != `{"ok":true}` || n.Load() != 1 {
		t.Fatalf("%s %v (%d attempts)", b, err, n.Load())
	}
}

func TestSendRetryAfterHTTPDate(t *testing.T) {
	t.Parallel()
	srv, n := counting(t, func(i int, w http.ResponseWriter, _ *http.Request) {
		if i == 1 {
			w.Header().Set("Retry-After", time.Now().Add(2*time.Second).UTC().Format(http.TimeFormat))
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, `{}`)
	})
	start := time.Now()
	if _, err := send(context.Background(), llm.Config{HTTPClient: srv.Client()}, srv.URL); err != nil {
		t.Fatal(err)
	}
	if n.Load() != 2 {
		t.Fatalf("attempts %d", n.Load())
	}
	if time.Since(start) < time.Second {
		t.Fatalf("did not wait for the Retry-After date")
	}
}

func TestSendRetryAfterMs(t *testing.T) {
	t.Parallel()
	srv, n := counting(t, func(i int, w http.ResponseWriter, _ *http.Request) {
		if i < 3 {
			w.Header().Set("Retry-After-Ms", "20")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		_, _ = io.WriteString(w, `{}`)
	})
	if _, err := send(context.Background(), llm.Config{HTTPClient: srv.Client()}, srv.URL); err != nil {
		t.Fatal(err)
	}
	if n.Load() != 3 {
		t.Fatalf("attempts %d", n.Load())
	}
}

func TestSendRetryCounts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		maxRetries int
		attempts   int32
	}{{-1, 1}, {0, 4}, {1, 2}} {
		srv, n := counting(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, `{"error":{"message":"upstream down"}}`)
		})
		_, err := send(context.Background(), llm.Config{HTTPClient: srv.Client(), MaxRetries: c.maxRetries}, srv.URL)
		var pe *llm.ProviderError
		if !errors.As(err, &pe) || pe.Status != 502 || pe.Message != "upstream down" || pe.Provider != "test" {
			t.Fatalf("MaxRetries %d: %#v", c.maxRetries, err)
		}
		if n.Load() != c.attempts {
			t.Errorf("MaxRetries %d: %d attempts, want %d", c.maxRetries, n.Load(), c.attempts)
		}
	}
}

func TestSendNoRetryOn4xx(t *testing.T) {
	t.Parallel()
	for _, status := range []int{400, 401, 403, 404, 422} {
		srv, n := counting(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(status)
			_, _ = io.WriteString(w, `{"error":{"message":"Incorrect API key provided: `+secret+`"}}`)
		})
		_, err := send(context.Background(), llm.Config{HTTPClient: srv.Client(), APIKey: secret}, srv.URL)
		var pe *llm.ProviderError
		if !errors.As(err, &pe) || pe.Status != status || !strings.HasPrefix(pe.Message, "Incorrect API key provided") {
			t.Fatalf("%d: %#v", status, err)
		}
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("%d: key in error %q", status, err)
		}
		if n.Load() != 1 {
			t.Errorf("%d retried", status)
		}
	}
}

func TestSendConnectionErrorsRetried(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepts atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepts.Add(1)
			_ = c.Close() // hang up without answering
		}
	}()
	url := "http://" + ln.Addr().String() + "/chat"
	_, err = send(context.Background(), llm.Config{APIKey: secret, MaxRetries: 2}, url)
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Status != 0 {
		t.Fatalf("got %#v", err)
	}
	if strings.Contains(err.Error(), secret) {
		t.Fatalf("key in error %q", err)
	}
	if accepts.Load() != 3 {
		t.Fatalf("connections %d, want 3", accepts.Load())
	}
}

func TestSendStopsWhenContextEnds(t *testing.T) {
	t.Parallel()
	srv, n := counting(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "20")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error":{"message":"slow down"}}`)
	})
	// The first answer read (its body closed), the client waits the 20 s
	// the provider asked for: cancel then, however slow the machine.
	read := make(chan struct{}, 16)
	base := srv.Client().Transport
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := base.RoundTrip(r)
		if err == nil {
			resp.Body = &signalClose{ReadCloser: resp.Body, closed: read}
		}
		return resp, err
	})}
	cfg := llm.Config{HTTPClient: client, APIKey: secret}

	// Canceled while waiting.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-read:
			cancel()
		case <-ctx.Done():
		}
	}()
	start := time.Now()
	_, err := send(ctx, cfg, srv.URL)
	if !errors.Is(err, context.Canceled) || time.Since(start) > 10*time.Second {
		t.Fatalf("got %v after %v", err, time.Since(start))
	}
	if !strings.Contains(err.Error(), "slow down") || strings.Contains(err.Error(), secret) {
		t.Fatalf("error %q", err)
	}

	// A deadline shorter than the requested wait: give up at once with the
	// provider's answer.
	ctx, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	n.Store(0)
	_, err = send(ctx, cfg, srv.URL)
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Status != 429 || n.Load() != 1 {
		t.Fatalf("got %#v after %d attempts", err, n.Load())
	}
}

func TestSendResponseTooLarge(t *testing.T) {
	t.Parallel()
	srv, n := counting(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		chunk := strings.Repeat("x", 1<<20)
		for range llm.MaxResponseBytes>>20 + 1 {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	})
	_, err := send(context.Background(), llm.Config{HTTPClient: srv.Client()}, srv.URL)
	if err == nil || !strings.Contains(err.Error(), "exceeds") || n.Load() != 1 {
		t.Fatalf("got %v after %d attempts", err, n.Load())
	}
}

func TestSendFallbackMessages(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		"":                         "Bad Request",
		"<html>bad gateway</html>": "<html>bad gateway</html>",
		`{"detail":"Not Found"}`:   "Not Found",
	} {
		srv, _ := counting(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, body)
		})
		_, err := llm.Send(context.Background(), llm.Config{HTTPClient: srv.Client()}, "test", srv.URL, nil, nil,
			func(int, []byte) string { return "" })
		var pe *llm.ProviderError
		if !errors.As(err, &pe) || pe.Message != want {
			t.Errorf("body %q: got %#v, want message %q", body, err, want)
		}
	}
}

func TestProviderMessage(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		`{"error":{"message":"Invalid 'messages'","type":"invalid_request_error"}}`:       "Invalid 'messages'",
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`:     "Overloaded",
		`{"error":"model 'x' not found"}`:                                                 "model 'x' not found",
		`{"object":"error","message":"The model does not exist.","type":"NotFoundError"}`: "The model does not exist.",
		`{"error":{"code":500,"message":"context size exceeded","type":"server_error"}}`:  "context size exceeded",
		`not json`:             "",
		`{"error":{"code":1}}`: "",
	} {
		if got := llm.ProviderMessage([]byte(body)); got != want {
			t.Errorf("%s: got %q, want %q", body, got, want)
		}
	}
}

func TestSendBadURLNotRetried(t *testing.T) {
	t.Parallel()
	start := time.Now()
	_, err := send(context.Background(), llm.Config{APIKey: secret}, "http://[::1:bad/chat")
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Status != 0 || time.Since(start) > 500*time.Millisecond {
		t.Fatalf("got %#v after %v", err, time.Since(start))
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// signalClose says on closed when its body is closed.
type signalClose struct {
	io.ReadCloser
	closed chan<- struct{}
}

func (b *signalClose) Close() error {
	err := b.ReadCloser.Close()
	select {
	case b.closed <- struct{}{}:
	default:
	}
	return err
}
