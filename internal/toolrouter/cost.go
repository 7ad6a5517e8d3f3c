package toolrouter

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Micros is an amount of money in millionths of its currency's unit
// (docs/costs.md "Money"): 0.002 USD is 2000. Sums of Micros are exact;
// no amount is ever a float once parsed.
type Micros int64

// MicrosPerUnit is how many Micros make one unit of a currency.
const MicrosPerUnit = 1_000_000

// ParseMicros reads an amount written as a decimal number (the registry's
// 0.002) into Micros; false when it is negative, not finite, has more than
// six decimals or is too large.
func ParseMicros(f float64) (Micros, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1e12 {
		return 0, false
	}
	m := math.Round(f * MicrosPerUnit)
	if math.Abs(m-f*MicrosPerUnit) > 1e-6*math.Max(1, math.Abs(m)) {
		return 0, false // more than six decimals
	}
	return Micros(m), true
}

// ParseMicrosText reads a decimal number's text ("0.002", "12") exactly.
func ParseMicrosText(s string) (Micros, bool) {
	s = strings.TrimSpace(s)
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" || len(frac) > 6 || strings.HasPrefix(whole, "-") || strings.HasPrefix(whole, "+") {
		return 0, false
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > 1e12 {
		return 0, false
	}
	frac += strings.Repeat("0", 6-len(frac))
	f, err := strconv.ParseInt(frac, 10, 64)
	if err != nil || f < 0 {
		return 0, false
	}
	return Micros(w*MicrosPerUnit + f), true
}

// String is m as a decimal number with as few decimals as it needs
// (at least none, at most six): 2000 is "0.002".
func (m Micros) String() string {
	var b [24]byte
	return string(m.appendText(b[:0]))
}

// appendText appends m's String to b, with strconv rather than fmt (issue
// 37: a routed call's cost is written in its result on every call):
// the whole units, then up to six decimals without their trailing zeros.
func (m Micros) appendText(b []byte) []byte {
	if m == math.MinInt64 { // has no positive twin: as fmt wrote it
		s := strings.TrimRight(fmt.Sprintf("-%d.%06d", int64(m)/MicrosPerUnit, int64(m)%MicrosPerUnit), "0")
		return append(b, strings.TrimSuffix(s, ".")...)
	}
	if m < 0 {
		b, m = append(b, '-'), -m
	}
	b = strconv.AppendInt(b, int64(m)/MicrosPerUnit, 10)
	frac := int64(m) % MicrosPerUnit
	if frac == 0 {
		return b
	}
	var d [6]byte
	for i := 5; i >= 0; i-- {
		d[i] = byte('0' + frac%10)
		frac /= 10
	}
	n := 6
	for d[n-1] == '0' {
		n--
	}
	return append(append(b, '.'), d[:n]...)
}

// MarshalJSON writes m as an exact JSON number (0.002, never 0.0020000001).
func (m Micros) MarshalJSON() ([]byte, error) { return m.appendText(make([]byte, 0, 24)), nil }

// UnmarshalJSON reads a JSON number exactly.
func (m *Micros) UnmarshalJSON(b []byte) error {
	s := string(b)
	neg := strings.HasPrefix(s, "-")
	v, ok := ParseMicrosText(strings.TrimPrefix(s, "-"))
	if !ok {
		// Exponent forms and the like: through a float, then checked.
		f, err := strconv.ParseFloat(strings.TrimPrefix(s, "-"), 64)
		if err != nil {
			return fmt.Errorf("amount %s: %w", s, err)
		}
		if v, ok = ParseMicros(f); !ok {
			return fmt.Errorf("amount %s: not an amount with at most six decimals", s)
		}
	}
	if neg {
		v = -v
	}
	*m = v
	return nil
}

// DefaultCurrency is the currency of a price or limit that names none.
const DefaultCurrency = "USD"

// Price is what one call of a tool costs (registry cost: {per_call,
// currency}). The zero Price is no price: the call is unpriced.
type Price struct {
	PerCall  Micros
	Currency string // "" when there is no price
}

// Priced reports whether p is a price (per_call: 0 is a price: free).
func (p Price) Priced() bool { return p.Currency != "" }

// ModelPrice is what a model's tokens cost, per million tokens
// (docs/costs.md "Model prices"); CachedInput is the price of input tokens
// read from the provider's prompt cache (Input when not set).
type ModelPrice struct {
	Input, Output, CachedInput Micros
	HasCached                  bool
	Currency                   string
	// Source says where the price comes from: registry, or the default
	// table's source and date.
	Source string
}

// Priced reports whether p is a price.
func (p ModelPrice) Priced() bool { return p.Currency != "" }

// TokenCost is what usage costs at p, rounded to the nearest micro-unit
// once per turn (half away from zero).
func (p ModelPrice) TokenCost(u TokenUsage) Micros {
	cached := min(max(u.CachedInputTokens, 0), max(u.InputTokens, 0))
	cachedPrice := p.Input
	if p.HasCached {
		cachedPrice = p.CachedInput
	}
	// micros per million tokens × tokens: exact in int64 far beyond any
	// turn (2^63 / 1e12 ≈ 9.2e6 million-token turns).
	num := (u.InputTokens-cached)*int64(p.Input) + cached*int64(cachedPrice) + u.OutputTokens*int64(p.Output)
	return Micros((num + 500_000) / 1_000_000)
}

// TokenUsage is what a provider reported a model turn used, from its own
// usage fields (docs/costs.md "Token usage"). CachedInputTokens are part
// of InputTokens.
type TokenUsage struct {
	InputTokens       int64 `json:"input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens,omitempty"`
}

// Cost sources: how a call's or a turn's cost was found.
const (
	CostFromRegistry = "registry" // the tool's cost.per_call
	CostReported     = "reported" // the backend reported it in _meta
	CostFromModel    = "model"    // token usage at the model's price
)

// Cost is what one call or model turn cost (the result's cost,
// docs/costs.md): Amount in Currency, or Unpriced when nothing prices it
// (never counted as 0).
type Cost struct {
	Amount   Micros `json:"amount"`
	Currency string `json:"currency,omitempty"`
	Unpriced bool   `json:"unpriced,omitempty"`
	// Source is registry, reported or model; absent when unpriced.
	Source string `json:"source,omitempty"`
	// Usage is a model turn's token usage.
	Usage *TokenUsage `json:"usage,omitempty"`
}

// SpendLimit is a client's or a virtual server's spend limit (registry
// spend_limit: {per_day, per_month, currency}); a zero maximum is none.
type SpendLimit struct {
	PerDay, PerMonth Micros
	HasDay, HasMonth bool
	Currency         string
}

// IsZero reports a limit that limits nothing.
func (l SpendLimit) IsZero() bool { return !l.HasDay && !l.HasMonth }

// Spend periods.
const (
	PeriodDay   = "day"
	PeriodMonth = "month"
)

// PeriodStart is the start (UTC) of the period holding t.
func PeriodStart(period string, t time.Time) time.Time {
	t = t.UTC()
	if period == PeriodMonth {
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// PeriodEnd is the end (UTC) of the period holding t: when a limit
// refusing a call in it resets (the Retry-After of a budget refusal).
func PeriodEnd(period string, t time.Time) time.Time {
	s := PeriodStart(period, t)
	if period == PeriodMonth {
		return s.AddDate(0, 1, 0)
	}
	return s.AddDate(0, 0, 1)
}

// Spend scopes: whose limit a counter belongs to.
const (
	ScopeClient        = "client"
	ScopeVirtualServer = "virtual_server"
)

// SpendCounter names one spend counter: a client's or a virtual
// server's, of one currency, in one period.
type SpendCounter struct {
	Scope, Name, Currency, Period string
	Start                         time.Time
}

// Key is the counter's key in a store.
func (c SpendCounter) Key() string {
	return c.Scope + "\x1f" + c.Name + "\x1f" + c.Currency + "\x1f" + c.Period
}

// SpendCheck is one limit a reservation must stay within: the counter
// and its maximum.
type SpendCheck struct {
	Counter SpendCounter
	Limit   Micros
	// Amount is what the reservation adds to this counter: its amount in
	// the counter's currency, 0 in another (or when unknown).
	Amount Micros
}

// SpendEntry is one charged call or model turn in the spend ledger
// (GET /usage): who, what, when and how much.
type SpendEntry struct {
	ID            string // the tool_call_id, or run id and turn
	At            time.Time
	Client        string
	VirtualServer string
	Tool          string // a tool call's canonical tool name
	Model         string // a model turn's provider/model
	RunID         string
	Currency      string
	Amount        Micros
	Unpriced      bool
	Usage         TokenUsage
}

// SpendKey names a ledger entry: its id and its start (At, to the
// microsecond, as the ledger keeps it). The ledger is ordered by start
// time, so a new entry is appended rather than inserted at the random
// place of its id (issue 37: a tool call's ledger entry cost a group
// commit one more page per call); a tool call's entry starts when the
// call did (CallRequest.Start), the time of its audit record.
type SpendKey struct {
	ID string
	At time.Time
}

// Key is e's ledger key.
func (e SpendEntry) Key() SpendKey { return SpendKey{ID: e.ID, At: e.At} }

// UsageGroups are what GET /usage groups by.
var UsageGroups = []string{"client", "tool", "model", "day", "virtual_server"}

// UsageFilter selects and groups ledger entries: From inclusive, To
// exclusive; Client, when set, only that client's; After is the last key
// of the previous page ("" for the first).
type UsageFilter struct {
	GroupBy  string
	From, To time.Time
	Client   string
	After    string
	Limit    int
}

// UsageRow is one group of GET /usage: its key, currency and totals.
type UsageRow struct {
	Key           string `json:"key"`
	Currency      string `json:"currency"`
	Amount        Micros `json:"amount"`
	Calls         int64  `json:"calls"`
	UnpricedCalls int64  `json:"unpriced_calls"`
	TokenUsage
}

// UsageCursor is the After of the page following row.
func (r UsageRow) Cursor() string { return r.Key + "\x1f" + r.Currency }

// Refuses reports whether the check refuses its reservation on its
// counter, which has spent spent: it would pass the limit, or its Amount
// is 0 (a cost known only after the call) and the limit is reached.
func (c SpendCheck) Refuses(spent Micros) bool {
	return spent+c.Amount > c.Limit || c.Amount == 0 && spent >= c.Limit
}
