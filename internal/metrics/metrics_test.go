package metrics

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// series returns the value of every series of the named family, keyed by
// its labels ("k=v,k=v" in the registry's order): a counter's value or a
// histogram's sample count.
func series(t *testing.T, m *Metrics, name string) map[string]float64 {
	t.Helper()
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, mt := range f.GetMetric() {
			var ls []string
			for _, l := range mt.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			v := mt.GetCounter().GetValue()
			if h := mt.GetHistogram(); h != nil {
				v = float64(h.GetSampleCount())
			}
			out[strings.Join(ls, ",")] = v
		}
	}
	return out
}

func wantSeries(t *testing.T, got map[string]float64, want map[string]float64) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
}

func TestToolCallAndHTTPRequestCount(t *testing.T) {
	t.Parallel()
	m := New()
	for range 3 {
		m.ToolCall(context.Background(), "billing", "test/echo", "success", 2*time.Millisecond)
	}
	m.ToolCall(context.Background(), "", "test/echo", "timeout", time.Second)
	m.ToolCall(context.Background(), "", "(unknown)", "not_found", time.Millisecond)
	for range 2 {
		m.HTTPRequest("/route", "POST", 200, time.Millisecond)
	}
	m.HTTPRequest("/route", "POST", 400, time.Millisecond)

	wantSeries(t, series(t, m, "toolrouter_tool_calls_total"), map[string]float64{
		"client=billing,outcome=success,tool=test/echo": 3,
		"client=,outcome=timeout,tool=test/echo":        1,
		"client=,outcome=not_found,tool=(unknown)":      1,
	})
	m.RateLimited("billing", 2)
	wantSeries(t, series(t, m, "toolrouter_rate_limited_calls_total"), map[string]float64{"client=billing": 2})
	wantSeries(t, series(t, m, "toolrouter_tool_call_duration_seconds"), map[string]float64{
		"tool=test/echo": 4,
		"tool=(unknown)": 1,
	})
	wantSeries(t, series(t, m, "toolrouter_http_requests_total"), map[string]float64{
		"method=POST,route=/route,status=200": 2,
		"method=POST,route=/route,status=400": 1,
	})
	wantSeries(t, series(t, m, "toolrouter_http_request_duration_seconds"), map[string]float64{
		"method=POST,route=/route": 3,
	})
}

func TestChildCacheIsBounded(t *testing.T) {
	t.Parallel()
	m := New()
	for i := range maxCachedChildren + 100 {
		m.HTTPRequest("/route", fmt.Sprintf("M%d", i), 200, time.Millisecond)
	}
	m.HTTPRequest("/route", "M1", 200, time.Millisecond)
	m.HTTPRequest("/route", fmt.Sprintf("M%d", maxCachedChildren+50), 200, time.Millisecond)
	if n := len(*m.httpChildren.m.Load()); n != maxCachedChildren {
		t.Errorf("cache holds %d entries, want %d", n, maxCachedChildren)
	}
	got := series(t, m, "toolrouter_http_requests_total")
	if len(got) != maxCachedChildren+100 {
		t.Errorf("%d series, want %d", len(got), maxCachedChildren+100)
	}
	for _, method := range []string{"M1", fmt.Sprintf("M%d", maxCachedChildren+50)} {
		if v := got["method="+method+",route=/route,status=200"]; v != 2 {
			t.Errorf("%s: counter = %v, want 2", method, v)
		}
	}
}

func TestInvalidLabelPanicsEveryTime(t *testing.T) {
	t.Parallel()
	m := New()
	for range 2 {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("an invalid UTF-8 label value did not panic")
				}
			}()
			m.ToolCall(context.Background(), "", "bad\xff", "success", time.Millisecond)
		}()
	}
}

func BenchmarkToolCall(b *testing.B) {
	m := New()
	b.ReportAllocs()
	for b.Loop() {
		m.ToolCall(context.Background(), "", "test/echo", "success", time.Millisecond)
	}
}

func BenchmarkHTTPRequest(b *testing.B) {
	m := New()
	b.ReportAllocs()
	for b.Loop() {
		m.HTTPRequest("/route", "POST", 200, time.Millisecond)
	}
}
