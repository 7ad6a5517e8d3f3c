package toolrouter

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

func TestMicros(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want Micros
		ok   bool
	}{{0.002, 2000, true}, {20, 20_000_000, true}, {0.1 + 0.2, 300_000, true}, {0, 0, true}, {0.0000001, 0, false}, {-1, 0, false}} {
		if got, ok := ParseMicros(tc.f); got != tc.want || ok != tc.ok {
			t.Errorf("ParseMicros(%v) = %v %v", tc.f, got, ok)
		}
	}
	for _, tc := range []struct {
		m    Micros
		text string
	}{{2000, "0.002"}, {20_000_000, "20"}, {1, "0.000001"}, {12_345_678, "12.345678"}, {0, "0"}, {-2500, "-0.0025"}} {
		if s := tc.m.String(); s != tc.text {
			t.Errorf("%d: %q, want %q", int64(tc.m), s, tc.text)
		}
		var back Micros
		if err := json.Unmarshal([]byte(tc.text), &back); err != nil || back != tc.m {
			t.Errorf("round trip of %s: %v %v", tc.text, back, err)
		}
	}
	// Sums of many small amounts stay exact (a float sum of 0.1 ten times
	// is 0.9999999999999999).
	var sum Micros
	for range 10 {
		m, _ := ParseMicrosText("0.1")
		sum += m
	}
	if sum.String() != "1" {
		t.Errorf("sum %s", sum)
	}
}

func TestPeriods(t *testing.T) {
	at := time.Date(2026, 12, 31, 23, 59, 0, 0, time.FixedZone("x", 3600))
	if got := PeriodEnd(PeriodDay, at); !got.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("day end %v", got)
	}
	if got := PeriodEnd(PeriodMonth, at); !got.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("month end %v", got)
	}
	if got := PeriodStart(PeriodMonth, at); !got.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("month start %v", got)
	}
	c := SpendCheck{Limit: 10, Amount: 0}
	if c.Refuses(9) || !c.Refuses(10) {
		t.Error("an unknown amount is refused only once the limit is reached")
	}
	c.Amount = 2
	if c.Refuses(8) || !c.Refuses(9) {
		t.Error("a known amount is refused when it would pass the limit")
	}
}

// TestMicrosTextAsFmt: String (strconv, issue 37) writes what the fmt
// formula it replaced wrote, for every number of decimals, both signs and
// the extremes.
func TestMicrosTextAsFmt(t *testing.T) {
	old := func(m Micros) string {
		sign := ""
		if m < 0 {
			sign, m = "-", -m
		}
		s := fmt.Sprintf("%s%d.%06d", sign, int64(m)/MicrosPerUnit, int64(m)%MicrosPerUnit)
		return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
	}
	ms := []Micros{0, 1, 9, 10, 100_000, 999_999, 1_000_000, 1_000_001, 10_000_000, 12_345_678, 1_234_560, math.MaxInt64, math.MinInt64, math.MinInt64 + 1}
	for v := Micros(1); v < 1<<62; v = v*7 + 3 {
		ms = append(ms, v, -v)
	}
	for _, m := range ms {
		b, _ := m.MarshalJSON()
		if got, want := m.String(), old(m); got != want || string(b) != want {
			t.Errorf("%d: String %q, MarshalJSON %s, want %q", int64(m), got, b, want)
		}
	}
}

// TestArgsDigestAllocations: a call's argument digest (every audited call)
// is the hex of its SHA-256 in one allocation, the string's (issue 37;
// hex.EncodeToString made two), and still the lowercase hex digest.
func TestArgsDigestAllocations(t *testing.T) {
	b := []byte(`{"msg":"hi"}`)
	if got := sha256Hex(b); got != fmt.Sprintf("%x", sha256.Sum256(b)) {
		t.Fatalf("sha256Hex = %s", got)
	}
	if n := testing.AllocsPerRun(100, func() { _ = sha256Hex(b) }); n > 1 {
		t.Errorf("sha256Hex allocates %v times, want 1", n)
	}
}
