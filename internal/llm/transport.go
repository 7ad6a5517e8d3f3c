package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/outbound"
)

// Transport limits and defaults used by Send.
const (
	// MaxResponseBytes caps a provider's response body.
	MaxResponseBytes = 32 << 20
	// DefaultMaxRetries is used when Config.MaxRetries is 0.
	DefaultMaxRetries = 3

	retryAfterCap = 30 * time.Second
	maxErrorText  = 512
	userAgent     = "toolrouterd"
)

// backoff spaces retries: 200ms doubling per attempt, drawn from [d/2, d)
// (so Base 150ms ± 1/3), at most 8s.
var backoff = outbound.Backoff{Base: 150 * time.Millisecond, Max: 8 * time.Second, Jitter: 1.0 / 3}

// NewHTTPClient builds the HTTP client an adapter uses when Config.HTTPClient
// is nil: its own outbound.NewTransport, and no overall timeout — the
// caller's context governs each call.
func NewHTTPClient() *http.Client {
	return &http.Client{Transport: outbound.NewTransport(), CheckRedirect: refuseRedirect}
}

// Send POSTs body to url with headers (plus Content-Type/Accept
// application/json and a User-Agent when not given) and returns the 2xx
// response body, read up to MaxResponseBytes.
//
// 429 and 5xx answers and connection errors are retried up to
// cfg.MaxRetries times (0: DefaultMaxRetries, negative: never) with
// exponential backoff (200ms doubling, jittered, capped at 8s) or the
// answer's Retry-After / retry-after-ms (capped at 30s); waiting stops when
// ctx is done. Any other non-2xx answer, and the last answer once retries are
// exhausted, is a *ProviderError whose Message is parseError(status, body)
// (the body's text, shortened, when parseError returns ""). cfg.APIKey never
// appears in a returned error.
func Send(ctx context.Context, cfg Config, provider, url string, headers http.Header, body []byte, parseError func(status int, body []byte) string) ([]byte, error) {
	client := NewClient(cfg.HTTPClient)
	if cfg.HTTPClient == nil {
		defer client.CloseIdleConnections()
	}
	retries := cfg.MaxRetries
	switch {
	case retries == 0:
		retries = DefaultMaxRetries
	case retries < 0:
		retries = 0
	}
	redact := Redactor(append(URLSecrets(cfg.BaseURL), append(URLSecrets(url), cfg.APIKey)...)...)

	var lastErr error
	for attempt := 0; ; attempt++ {
		status, respBody, wait, err := sendOnce(ctx, client, url, headers, body)
		switch {
		case err == nil && status >= 200 && status <= 299:
			return respBody, nil
		case err != nil && ctx.Err() != nil:
			// Canceled or timed out by the caller: not retryable.
			return nil, canceled(ctx, provider, lastErr, redact)
		case err != nil:
			var tooBig *TooLargeError
			if errors.As(err, &tooBig) {
				return nil, &ProviderError{Provider: provider, Status: status, Message: tooBig.Error()}
			}
			var moved *RedirectError
			if errors.As(err, &moved) {
				return nil, &ProviderError{Provider: provider, Status: moved.Status, Message: redact(moved.Error())}
			}
			var bad *badURLError
			if errors.As(err, &bad) {
				return nil, &ProviderError{Provider: provider, Message: redact(err.Error())}
			}
			lastErr = &ProviderError{Provider: provider, Message: redact("request failed: " + err.Error())}
		default:
			msg := ProviderMessage(respBody)
			if parseError != nil {
				msg = parseError(status, respBody)
			}
			if strings.TrimSpace(msg) == "" {
				msg = fallbackMessage(status, respBody)
			}
			pe := &ProviderError{Provider: provider, Status: status, Message: redact(msg)}
			if !retryable(status) {
				return nil, pe
			}
			lastErr = pe
		}
		if attempt >= retries {
			if pe, ok := lastErr.(*ProviderError); ok && pe.Status == 0 && attempt > 0 {
				pe.Message = fmt.Sprintf("%s (after %d attempts)", pe.Message, attempt+1)
			}
			return nil, lastErr
		}
		if wait < 0 {
			wait = backoff.Delay(attempt + 1)
		}
		switch err := outbound.Sleep(ctx, wait); {
		case errors.Is(err, outbound.ErrPastDeadline):
			// The wait would outlast the caller's deadline: give up now.
			return nil, lastErr
		case err != nil:
			return nil, canceled(ctx, provider, lastErr, redact)
		}
	}
}

// sendOnce makes one attempt. wait is the server's requested delay before a
// retry (-1: none given).
func sendOnce(ctx context.Context, client Client, url string, headers http.Header, body []byte) (status int, respBody []byte, wait time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, -1, &badURLError{err}
	}
	for k, vs := range headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", userAgent)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, -1, err
	}
	defer resp.Body.Close()
	respBody, err = io.ReadAll(resp.Body) // Client caps it
	var tooBig *TooLargeError
	switch {
	case errors.As(err, &tooBig):
		return resp.StatusCode, nil, -1, tooBig
	case err != nil:
		// A body cut off mid-way is a connection problem: retryable.
		return 0, nil, -1, fmt.Errorf("reading response: %w", err)
	}
	return resp.StatusCode, respBody, outbound.RetryAfter(resp.Header, time.Now(), retryAfterCap), nil
}

// badURLError: the request could not be built; retrying cannot help.
type badURLError struct{ err error }

func (e *badURLError) Error() string { return "invalid request: " + e.err.Error() }

func retryable(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}

// canceled is the error of a call whose context ended; it wraps ctx.Err()
// and mentions the last provider answer, if any.
func canceled(ctx context.Context, provider string, last error, redact func(string) string) error {
	if last == nil {
		return fmt.Errorf("%s: %w", provider, ctx.Err())
	}
	return fmt.Errorf("%s: %w (last error: %s)", provider, ctx.Err(), redact(last.Error()))
}

// ProviderMessage extracts the human message of a provider's JSON error body:
// outbound.ErrorMessage ({"error":{"message"}} of OpenAI, Anthropic and
// llama.cpp, {"error":"…"} of Ollama, {"message":"…"} of vLLM), else its
// {"detail":"…"}; "" when none of these is present.
func ProviderMessage(body []byte) string {
	if s := outbound.ErrorMessage(body); s != "" {
		return s
	}
	var v struct {
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(bytes.TrimSpace(body), &v) != nil {
		return ""
	}
	return outbound.JSONString(v.Detail)
}

// fallbackMessage is the body's text, shortened, or the status text.
func fallbackMessage(status int, body []byte) string {
	if s := ProviderMessage(body); s != "" {
		return s
	}
	s := strings.TrimSpace(strings.ToValidUTF8(string(body), "\uFFFD"))
	if s == "" {
		if t := http.StatusText(status); t != "" {
			return t
		}
		return "HTTP " + strconv.Itoa(status)
	}
	if len(s) > maxErrorText {
		s = strings.ToValidUTF8(s[:maxErrorText], "") + "…"
	}
	return s
}

// WithDefaults is cfg as an adapter uses it: with an HTTP client of its own
// (NewHTTPClient) when it has none, and its base URL without surrounding
// spaces and trailing slashes, or def when it has none.
func WithDefaults(cfg Config, def string) (Config, string) {
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = NewHTTPClient()
	}
	base := strings.TrimRight(strings.TrimSpace(cfg.BaseURL), "/")
	if base == "" {
		base = def
	}
	return cfg, base
}

// Bearer is the header of a request that carries key as a bearer token;
// empty without a key.
func Bearer(key string) http.Header {
	h := http.Header{}
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	return h
}
