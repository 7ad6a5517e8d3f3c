package toolrouter_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"regexp"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

func TestToolCallID(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte("plan-001:0"))
	want := "tc_" + hex.EncodeToString(sum[:])[:24]
	if got, _ := toolrouter.ToolCallID("plan-001", 0); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	a, _ := toolrouter.ToolCallID("plan-001", 5)
	b, _ := toolrouter.ToolCallID("plan-001", 5)
	c, _ := toolrouter.ToolCallID("plan-001", 6)
	if a != b || a == c || len(a) != 27 {
		t.Errorf("%s %s %s", a, b, c)
	}
	if _, err := toolrouter.ToolCallID("", 0); err == nil || !strings.Contains(err.Error(), "plan_id") {
		t.Errorf("empty plan: %v", err)
	}
	if _, err := toolrouter.ToolCallID("p", -1); err == nil || !strings.Contains(err.Error(), "sequence") {
		t.Errorf("negative sequence: %v", err)
	}
}

func TestClassifyError(t *testing.T) {
	t.Parallel()
	for msg, want := range map[string]toolrouter.ErrorCategory{
		"Operation timed out after 30s":     toolrouter.CategoryTimeout,
		"context deadline exceeded":         toolrouter.CategoryTimeout,
		"Permission denied: cannot write":   toolrouter.CategoryPermission,
		"403 Forbidden":                     toolrouter.CategoryPermission,
		"Tool 'x/y' not found":              toolrouter.CategoryNotFound,
		"Insufficient memory for operation": toolrouter.CategoryResource,
		"rate limit exceeded":               toolrouter.CategoryResource,
		"Schema validation failed":          toolrouter.CategorySchema,
		"Failed to parse response":          toolrouter.CategoryParse,
		"invalid JSON":                      toolrouter.CategoryParse,
		"Something unexpected happened":     toolrouter.CategoryExecution,
		"RuntimeError: boom":                toolrouter.CategoryExecution,
		"":                                  toolrouter.CategoryUnknown,
		"   ":                               toolrouter.CategoryUnknown,
	} {
		if got := toolrouter.ClassifyError(msg); got != want {
			t.Errorf("%q: %s, want %s", msg, got, want)
		}
	}
}

func TestClassifyStatus(t *testing.T) {
	t.Parallel()
	for code, want := range map[int]toolrouter.ErrorCategory{
		408: toolrouter.CategoryTimeout, 504: toolrouter.CategoryTimeout,
		401: toolrouter.CategoryPermission, 403: toolrouter.CategoryPermission,
		404: toolrouter.CategoryNotFound, 413: toolrouter.CategoryResource, 429: toolrouter.CategoryResource,
		503: toolrouter.CategoryResource, 400: toolrouter.CategorySchema, 422: toolrouter.CategorySchema,
	} {
		if got, ok := toolrouter.ClassifyStatus(code); !ok || got != want {
			t.Errorf("%d: %s %v, want %s", code, got, ok, want)
		}
	}
	if _, ok := toolrouter.ClassifyStatus(500); ok {
		t.Error("500 is decided by the message")
	}
}

func TestAliases(t *testing.T) {
	t.Parallel()
	strict := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	gemini := regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$`)
	mcp := regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
	names := []string{"test/echo", "test_echo", "get_weather", "a.b:c", "1abc", "x/" + strings.Repeat("y", 200), "ünïcode/tool", "test/echo2"}
	seen := map[toolrouter.Format]map[string]string{}
	for _, f := range []toolrouter.Format{toolrouter.FormatOpenAI, toolrouter.FormatGemini, toolrouter.FormatMCP} {
		seen[f] = map[string]string{}
		for _, n := range names {
			a := toolrouter.ExportName(f, n)
			re := map[toolrouter.Format]*regexp.Regexp{toolrouter.FormatOpenAI: strict, toolrouter.FormatGemini: gemini, toolrouter.FormatMCP: mcp}[f]
			if !re.MatchString(a) {
				t.Errorf("%s alias of %q is %q, which the provider rejects", f, n, a)
			}
			if prev, dup := seen[f][a]; dup {
				t.Errorf("%s: %q and %q share the alias %q", f, prev, n, a)
			}
			seen[f][a] = n
			if again := toolrouter.ExportName(f, n); again != a {
				t.Errorf("alias not deterministic: %q vs %q", a, again)
			}
		}
	}
	if got := toolrouter.ExportName(toolrouter.FormatOpenAI, "get_weather"); got != "get_weather" {
		t.Errorf("a valid name is changed: %q", got)
	}
	if got := toolrouter.ExportName(toolrouter.FormatLangChain, "test/echo"); got != "test/echo" {
		t.Errorf("langchain accepts any name: %q", got)
	}
}

// TestOutcomeMarkChecked: the mark holds for the very bytes marked, in
// copies of the Outcome, and for nothing set afterwards.
func TestOutcomeMarkChecked(t *testing.T) {
	var o toolrouter.Outcome
	if o.OutputChecked() {
		t.Error("an empty outcome is checked")
	}
	o.Output = json.RawMessage(`{"a":1}`)
	if o.OutputChecked() {
		t.Error("an output nobody marked is checked")
	}
	o.MarkChecked()
	c := o
	if !o.OutputChecked() || !c.OutputChecked() {
		t.Error("a marked output (or its outcome's copy) is not checked")
	}
	c.Output = append(json.RawMessage(nil), o.Output...)
	if c.OutputChecked() {
		t.Error("a copy of the bytes set anew is checked")
	}
	o.Output = o.Output[:3]
	if o.OutputChecked() {
		t.Error("a shorter output set anew is checked")
	}
}

// TestOutcomeShapedKeepsTheMark: a shaped output is marked checked, and
// the whole output keeps the mark it had as the output: checked when it
// was, not when it was not, nor once set anew.
func TestOutcomeShapedKeepsTheMark(t *testing.T) {
	o := toolrouter.Outcome{Output: json.RawMessage(`{"a":[1,2,3]}`)}
	o.MarkChecked()
	o.Shaped(json.RawMessage(`{"a":[1]}`))
	if !o.OutputChecked() || !o.FullOutputChecked() || string(o.FullOutput) != `{"a":[1,2,3]}` {
		t.Errorf("shaped from a checked output: output checked %v, whole output checked %v (%s)", o.OutputChecked(), o.FullOutputChecked(), o.FullOutput)
	}
	o.FullOutput = append(json.RawMessage(nil), o.FullOutput...)
	if o.FullOutputChecked() {
		t.Error("a whole output set anew is checked")
	}
	u := toolrouter.Outcome{Output: json.RawMessage(`{"a":[1,2,3]}`)}
	u.Shaped(json.RawMessage(`{"a":[1]}`))
	if !u.OutputChecked() || u.FullOutputChecked() {
		t.Errorf("shaped from an unchecked output: output checked %v, whole output checked %v", u.OutputChecked(), u.FullOutputChecked())
	}
}
