package guardrail

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Every built-in rule compiles with Go's regexp (RE2): none is dropped.
func TestBuiltinRulesCompile(t *testing.T) {
	for _, r := range append(ownRules, gitleaksRules...) {
		if _, err := regexp.Compile(r.Regex); err != nil {
			t.Errorf("rule %s: %v", r.ID, err)
		}
	}
	if got, want := len(builtinRules().rules), len(ownRules)+len(gitleaksRules); got != want || want < 200 {
		t.Errorf("%d rules compiled of %d", got, want)
	}
}

func TestRedactText(t *testing.T) {
	r := newRedactor(nil)
	for in, want := range map[string]string{
		"Authorization: Bearer abcdefghijklmnop1234": "Authorization: Bearer [REDACTED:bearer-token]",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq98zJ0bbLqLhYmHH9Ljc8E5pY2e6iC2FzV8nW6HtFbXfbq\nabc\n-----END RSA PRIVATE KEY-----": "[REDACTED:private-key]",
		"gh token ghp_R2d2C3poR2d2C3poR2d2C3poR2d2C3poab12 ok":              "gh token [REDACTED:github-pat] ok",
		"nothing secret here, just 1234 tokens":                             "nothing secret here, just 1234 tokens",
		"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY": "aws_secret_access_key = [REDACTED:password-assignment]",
	} {
		found := map[string]int{}
		if got := r.text(in, found); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseAnswer(t *testing.T) {
	for _, c := range []struct {
		body, phase string
		ok          bool
	}{
		{`{"decision":"allow"}`, "before", true},
		{`{"decision":"deny","reason":"no"}`, "after", true},
		{`{"decision":"modify","arguments":{"a":1}}`, "before", true},
		{`{"decision":"modify","output":null}`, "after", true},
		{`{"decision":"modify","output":1}`, "before", false},
		{`{"decision":"modify","arguments":{}}`, "after", false},
		{`{"decision":"allow","reason":7}`, "before", false},
		{`{}`, "before", false},
		{` {"decision":"allow"} `, "before", true},
		// Duplicate and case-variant members (issue 32, finding 14).
		{`{"decision":"deny","Decision":"allow"}`, "before", false},
		{`{"Decision":"allow"}`, "before", false},
		{`{"decision":"deny","decision":"allow"}`, "before", false},
		{`{"decision":"deny","reason":"a","REASON":"b"}`, "before", false},
		{`{"decision":"modify","arguments":{"a":1,"A":2}}`, "before", true}, // the tool's arguments are the tool's business
	} {
		_, err := parseAnswer([]byte(c.body), c.phase)
		if (err == nil) != c.ok {
			t.Errorf("%s (%s): err %v, want ok=%v", c.body, c.phase, err, c.ok)
		}
	}
}

// TestRedactOutcomeMCPResultOnly: a secret in an MCP result's text block
// but not in the output (its structuredContent) is redacted and counted:
// /mcp passes the result's blocks on.
func TestRedactOutcomeMCPResultOnly(t *testing.T) {
	h := &hook{redact: newRedactor(nil)}
	const key = "ghp_R2d2C3poR2d2C3poR2d2C3poR2d2C3poab12"
	out := toolrouter.Outcome{Output: json.RawMessage(`{"ok":true}`),
		MCPResult: json.RawMessage(`{"content":[{"type":"text","text":"token ` + key + `"}],"structuredContent":{"ok":true}}`)}
	got, d := h.redactOutcome(out)
	if strings.Contains(string(got.MCPResult), key) || d.Redacted != 1 || d.Decision != decisionModify {
		t.Errorf("decision %+v, MCP result %s", d, got.MCPResult)
	}
	// The same secret in both counts once.
	out.Output = json.RawMessage(`{"t":"token ` + key + `"}`)
	if _, d := h.redactOutcome(out); d.Redacted != 1 {
		t.Errorf("a secret in the output and the MCP result counted %d times", d.Redacted)
	}
}

// TestRedactOutcomeHandsTheCheckAlong (issue 37: an output scanned once):
// an output the backend checked is redacted without a scan to check it
// again, and what redaction makes of valid JSON is marked checked for the
// next hook or step; an output nobody checked is checked here, and one
// that is not JSON is left as it was, unmarked.
func TestRedactOutcomeHandsTheCheckAlong(t *testing.T) {
	h := &hook{redact: newRedactor(nil)}
	const key = "ghp_R2d2C3poR2d2C3poR2d2C3poR2d2C3poab12"
	for _, c := range []struct {
		name, output   string
		marked         bool
		wantChecked    bool
		wantRedactions int
	}{
		{"checked, with a secret", `{"t":"token ` + key + `"}`, true, true, 1},
		{"checked, clean", `{"t":"fine"}`, true, true, 0},
		{"not checked, valid", `{"t":"token ` + key + `"}`, false, true, 1},
		{"not checked, not JSON", `{"t":"token ` + key, false, false, 0},
	} {
		out := toolrouter.Outcome{Output: json.RawMessage(c.output)}
		if c.marked {
			out.MarkChecked()
		}
		got, d := h.redactOutcome(out)
		if got.OutputChecked() != c.wantChecked || d.Redacted != c.wantRedactions {
			t.Errorf("%s: checked %v, %d redacted; want %v, %d (output %s)", c.name, got.OutputChecked(), d.Redacted, c.wantChecked, c.wantRedactions, got.Output)
		}
	}
	// Trusted, not scanned: a marked output is walked as JSON as it is
	// (this one, which no backend would mark, shows that no check ran).
	bad := toolrouter.Outcome{Output: json.RawMessage(`{"t":"` + key + `"`)}
	bad.MarkChecked()
	if _, ok := h.redact.jsonChecked(bad.Output, map[string]int{}, bad.OutputChecked()); !ok {
		t.Error("a checked output was checked again")
	}
}

// BenchmarkRedactOutcome is one redact hook on a 100 kB JSON output, as the
// backend handed it along (checked) and as nobody had (scanned first to
// check it is JSON): what handing the check along saves (issue 37).
func BenchmarkRedactOutcome(b *testing.B) {
	h := &hook{redact: newRedactor(nil)}
	rows := make([]map[string]any, 0, 1000)
	for i := range 1000 {
		rows = append(rows, map[string]any{"id": i, "name": "row name " + strings.Repeat("x", 40), "ok": i%2 == 0})
	}
	raw, _ := json.Marshal(rows)
	for _, checked := range []bool{true, false} {
		b.Run(map[bool]string{true: "checked", false: "unchecked"}[checked], func(b *testing.B) {
			out := toolrouter.Outcome{Output: raw}
			if checked {
				out.MarkChecked()
			}
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				h.redactOutcome(out)
			}
		})
	}
}
