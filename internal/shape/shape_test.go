package shape_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/shape"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

func TestTextKeepsHeadAndTailWithMarker(t *testing.T) {
	s := strings.Repeat("a", 1000) + strings.Repeat("é", 5000) + strings.Repeat("z", 1000)
	got := shape.Text(s, 500, "GET /results/tc_1")
	if len(got) > 500 {
		t.Fatalf("%d bytes, want at most 500", len(got))
	}
	if !strings.HasPrefix(got, "aaaa") || !strings.HasSuffix(got, "zzzz") {
		t.Errorf("head or tail lost: %q", got)
	}
	cut := len(s) - (len(got) - len(got[strings.Index(got, "\n[…"):strings.Index(got, "…]\n")+len("…]\n")]))
	if !strings.Contains(got, fmt.Sprintf("cut %s of 12,000 bytes here; the whole output: GET /results/tc_1", groupInt(cut))) {
		t.Errorf("marker: %q (cut %d)", got, cut)
	}
	if !json.Valid(mustJSON(t, got)) || !strings.ContainsRune(got, 'a') {
		t.Error("invalid UTF-8 after the cut")
	}
}

func groupInt(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestOutputUnderBudgetUnchanged(t *testing.T) {
	raw := json.RawMessage(`{"b":1,"a":[1,2,3]}`)
	got, cut := shape.New().Output(raw, toolrouter.OutputBudget{Bytes: 256}, "")
	if cut || string(got) != string(raw) {
		t.Errorf("got %s cut %v", got, cut)
	}
}

// randomJSON is a random document of nested objects, arrays, long strings
// and numbers.
func randomJSON(r *rand.Rand, depth int) any {
	switch k := r.IntN(6); {
	case depth > 4 || k == 0:
		return strings.Repeat("x<\"é\n", r.IntN(400))
	case k == 1:
		return r.Float64() * 1e9
	case k == 2 || k == 3:
		a := make([]any, r.IntN(9))
		for i := range a {
			a[i] = randomJSON(r, depth+1)
		}
		return a
	default:
		m := map[string]any{}
		for i := range r.IntN(9) {
			m[fmt.Sprintf("key-%d-%s", i, strings.Repeat("k", r.IntN(20)))] = randomJSON(r, depth+1)
		}
		return m
	}
}

func TestJSONAlwaysFitsAndStaysValid(t *testing.T) {
	s := shape.New()
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 120 {
		raw := mustJSON(t, randomJSON(r, 0))
		limit := shape.MinBytes + r.IntN(4000)
		got, cut := s.Output(raw, toolrouter.OutputBudget{Bytes: limit}, "GET /results/tc_x")
		if len(got) > limit || !json.Valid(got) {
			t.Fatalf("case %d: %d bytes (limit %d, input %d), valid %v: %.300s", i, len(got), limit, len(raw), json.Valid(got), got)
		}
		if cut != (len(raw) > limit) {
			t.Fatalf("case %d: cut %v for %d bytes in %d", i, cut, len(raw), limit)
		}
	}
}

func TestJSONKeepsSmallMembersAndMarksCutArrays(t *testing.T) {
	items := make([]any, 10000)
	for i := range items {
		items[i] = map[string]any{"id": i, "name": fmt.Sprintf("item %d", i)}
	}
	raw := mustJSON(t, map[string]any{"total": 10000, "items": items, "next": "cursor-1"})
	got, cut := shape.New().Output(raw, toolrouter.OutputBudget{Bytes: 2000}, "")
	if !cut || len(got) > 2000 {
		t.Fatalf("cut %v, %d bytes", cut, len(got))
	}
	var v struct {
		Total int              `json:"total"`
		Next  string           `json:"next"`
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal(got, &v); err == nil {
		t.Fatalf("items should end with a marker string: %s", got)
	}
	var loose map[string]any
	if err := json.Unmarshal(got, &loose); err != nil {
		t.Fatal(err)
	}
	if loose["total"].(float64) != 10000 || loose["next"] != "cursor-1" {
		t.Errorf("small members lost: %s", got)
	}
	list := loose["items"].([]any)
	first := list[0].(map[string]any)
	last, _ := list[len(list)-1].(string)
	if first["name"] != "item 0" || !strings.HasPrefix(last, "… ") || !strings.HasSuffix(last, " more items cut") {
		t.Errorf("items: first %v, last %q", first, last)
	}
}

func TestKeepPaths(t *testing.T) {
	items := make([]any, 500)
	for i := range items {
		items[i] = map[string]any{"id": i, "body": strings.Repeat("b", 100)}
	}
	raw := mustJSON(t, map[string]any{"total": 500, "items": items, "debug": strings.Repeat("d", 10000)})
	b := toolrouter.OutputBudget{Bytes: 4096, Keep: []string{"$.items[0:3]", "$.total", "$.items[1].id"}}
	got, cut := shape.New().Output(raw, b, "")
	want := `{"items":[` + strings.Repeat(`,`, 0)
	var v map[string]any
	if !cut || json.Unmarshal(got, &v) != nil || !strings.HasPrefix(string(got), want) {
		t.Fatalf("cut %v: %s", cut, got)
	}
	if len(v) != 2 || v["total"].(float64) != 500 || len(v["items"].([]any)) != 3 || v["items"].([]any)[2].(map[string]any)["id"].(float64) != 2 {
		t.Errorf("projection: %s", got)
	}
	if err := shape.CheckKeep("$.items[0:"); err == nil || shape.CheckKeep("$.ok") != nil {
		t.Errorf("CheckKeep: %v", err)
	}
}

func TestTokenBudget(t *testing.T) {
	s := shape.New()
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 20000)
	raw := mustJSON(t, text)
	got, cut := s.Output(raw, toolrouter.OutputBudget{Tokens: 1000}, "GET /results/tc_t")
	var str string
	if !cut || json.Unmarshal(got, &str) != nil {
		t.Fatalf("cut %v: %.200s", cut, got)
	}
	n, err := s.Tokens(string(got))
	if err != nil || n > 1000 || n < 500 {
		t.Errorf("%d tokens (err %v), want 500..1000", n, err)
	}
	if !strings.Contains(str, "the whole output: GET /results/tc_t") {
		t.Error("no marker")
	}
	if n, _ := s.Tokens("hello world"); n != 2 {
		t.Errorf("o200k_base: hello world is %d tokens, want 2", n)
	}
}

func TestMCPResultShapesContentAndStructured(t *testing.T) {
	big := strings.Repeat("line of text\n", 100000)
	res := map[string]any{
		"content": []any{
			map[string]any{"type": "text", "text": "short"},
			map[string]any{"type": "text", "text": big},
			map[string]any{"type": "image", "mimeType": "image/png", "data": strings.Repeat("QUJD", 100000)},
		},
		"structuredContent": map[string]any{"text": big},
		"_meta":             map[string]any{"k": "v"},
	}
	got := shape.New().MCPResult(mustJSON(t, res), 4000, nil, "GET /results/tc_m")
	var out struct {
		Content []struct {
			Type, Text string
		}
		StructuredContent map[string]string
		Meta              map[string]string `json:"_meta"`
	}
	if err := json.Unmarshal(got, &out); err != nil {
		t.Fatal(err)
	}
	sum := 0
	for _, c := range out.Content {
		sum += len(c.Text)
	}
	if len(out.Content) != 3 || out.Content[0].Text != "short" || sum > 4000 || out.Content[2].Type != "text" ||
		!strings.Contains(out.Content[1].Text, "toolrouterd cut") || !strings.Contains(out.Content[2].Text, "image/png block of 400,000 bytes") {
		t.Errorf("content (%d bytes): %+v", sum, out.Content)
	}
	if b, _ := json.Marshal(out.StructuredContent); len(b) > 4000 || out.Meta["k"] != "v" {
		t.Errorf("structuredContent %d bytes, _meta %v", len(b), out.Meta)
	}
}

func TestContextWindow(t *testing.T) {
	for model, want := range map[string]int{
		"gpt-4o-mini": 128000, "gpt-4.1": 1047576, "claude-sonnet-4-5": 200000,
		"anthropic.claude-3-5-sonnet-20240620-v1:0": 200000, "openai/gpt-5-mini": 400000,
		"qwen2.5:7b": 32768, "some-local-model": 0,
	} {
		if got := shape.ContextWindow(model, 0); got != want {
			t.Errorf("%s: %d, want %d", model, got, want)
		}
	}
	if got := shape.ContextWindow("gpt-4o", 8192); got != 8192 {
		t.Errorf("configured: %d", got)
	}
	if got := shape.RunShare(128000, 10000, 2); got != 32000 {
		t.Errorf("share %d, want 32000 (a quarter of the window)", got)
	}
	if got := shape.RunShare(32768, 20000, 2); got != (32768-4096-20000)/2 {
		t.Errorf("share %d", got)
	}
	if got := shape.RunShare(8192, 9000, 3); got != 256 {
		t.Errorf("share of a full window %d, want the floor 256", got)
	}
}

// TestEscapesKeepTheMarker: a text whose JSON escapes lengthen it is cut
// further, its marker kept.
func TestEscapesKeepTheMarker(t *testing.T) {
	raw := mustJSON(t, "HEAD\n"+strings.Repeat("line\n", 100000)+"TAIL")
	got, cut := shape.New().Output(raw, toolrouter.OutputBudget{Bytes: 1000}, "GET /results/tc_e")
	var s string
	if !cut || len(got) > 1000 || json.Unmarshal(got, &s) != nil || !strings.HasPrefix(s, "HEAD\n") || !strings.HasSuffix(s, "TAIL") ||
		!strings.Contains(s, "bytes here; the whole output: GET /results/tc_e …]") {
		t.Errorf("%d bytes: %s", len(got), got)
	}
}

// TestHugeFlatArrayCountsWhatItCut: a million-item array is parsed only as
// far as the budget can hold, and its marker counts every item cut.
func TestHugeFlatArrayCountsWhatItCut(t *testing.T) {
	raw := []byte("[" + strings.TrimSuffix(strings.Repeat("1,", 1_000_000), ",") + "]")
	got, cut := shape.New().Output(raw, toolrouter.OutputBudget{Bytes: 1000}, "")
	var items []any
	if !cut || len(got) > 1000 || json.Unmarshal(got, &items) != nil {
		t.Fatalf("cut %v, %d bytes: %.200s", cut, len(got), got)
	}
	kept := len(items) - 1
	if want := fmt.Sprintf("… %s more items cut", groupInt(1_000_000-kept)); items[len(items)-1] != want {
		t.Errorf("marker %q, want %q", items[len(items)-1], want)
	}
}
