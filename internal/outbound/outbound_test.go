package outbound_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/outbound"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"", -1},
		{"soon", -1},
		{"-1", -1},
		{"0", 0},
		{"1", time.Second},
		{" 1 ", time.Second},
		{"2", 2 * time.Second},
		{"1.5", 1500 * time.Millisecond},
		{"120", 2 * time.Second},
		{"99999999999999999", 2 * time.Second},
		{now.Add(time.Second).Format(http.TimeFormat), time.Second},
		{now.Add(time.Hour).Format(http.TimeFormat), 2 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
	} {
		if got := outbound.RetryAfter(http.Header{"Retry-After": {tc.in}}, now, 2*time.Second); got != tc.want {
			t.Errorf("RetryAfter(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestRetryAfterMs(t *testing.T) {
	h := http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"1"}}
	if got := outbound.RetryAfter(h, time.Now(), 2*time.Second); got != 250*time.Millisecond {
		t.Errorf("retry-after-ms 250 = %v", got)
	}
	h.Set("Retry-After-Ms", "nonsense")
	if got := outbound.RetryAfter(h, time.Now(), 2*time.Second); got != time.Second {
		t.Errorf("a bad retry-after-ms falls back to Retry-After: %v", got)
	}
}

func TestBackoffDelay(t *testing.T) {
	b := outbound.Backoff{Base: 100 * time.Millisecond, Max: 2 * time.Second, Jitter: 0.5}
	for n := 1; n <= 40; n++ {
		d := min(100*time.Millisecond<<min(n-1, 20), 2*time.Second)
		for range 200 {
			got := b.Delay(n)
			if got < d/2 || got >= d*3/2 || got > 2*time.Second {
				t.Fatalf("Delay(%d) = %v, want in [%v, %v) and at most 2s", n, got, d/2, d*3/2)
			}
		}
	}
	if got := (outbound.Backoff{Base: time.Second, Max: time.Minute}).Delay(3); got != 4*time.Second {
		t.Errorf("without jitter Delay(3) = %v, want 4s", got)
	}
}

func TestSleep(t *testing.T) {
	if err := outbound.Sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("a plain wait: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if err := outbound.Sleep(ctx, 2*time.Hour); !errors.Is(err, outbound.ErrPastDeadline) {
		t.Errorf("a wait past the deadline: %v", err)
	}
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if err := outbound.Sleep(cctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled context: %v", err)
	}
}

func TestErrorMessage(t *testing.T) {
	for body, want := range map[string]string{
		`{"error":{"message":"Invalid 'messages'","type":"invalid_request_error"}}`:       "Invalid 'messages'",
		`{"error":"model 'x' not found"}`:                                                 "model 'x' not found",
		`{"object":"error","message":"The model does not exist.","type":"NotFoundError"}`: "The model does not exist.",
		` {"error":" padded "} `:                                                          "padded",
		`{"error":{"code":1}}`:                                                            "",
		`{"error":7,"message":"m"}`:                                                       "m",
		`{"detail":"not ours"}`:                                                           "",
		`not json`:                                                                        "",
		`["error"]`:                                                                       "",
	} {
		if got := outbound.ErrorMessage([]byte(body)); got != want {
			t.Errorf("%s: got %q, want %q", body, got, want)
		}
	}
}
