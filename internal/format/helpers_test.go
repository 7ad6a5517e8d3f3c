package format_test

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// decode decodes JSON text the way the service does (numbers as float64).
func decode(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad test JSON %q: %v", s, err)
	}
	return v
}

// roundTrip marshals v and decodes it again, so that values built from maps
// and json.RawMessage compare equal to decoded JSON.
func roundTrip(t testing.TB, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %#v: %v", v, err)
	}
	return decode(t, string(b))
}

// jsonEqual fails unless got, marshalled, is the JSON value want.
func jsonEqual(t testing.TB, got any, want string) {
	t.Helper()
	g, w := roundTrip(t, got), decode(t, want)
	if !reflect.DeepEqual(g, w) {
		gb, _ := json.Marshal(g)
		wb, _ := json.Marshal(w)
		t.Errorf("got  %s\nwant %s", gb, wb)
	}
}

// wantInvalid fails unless err is a *toolrouter.Error of code EINVALID on
// field whose message contains every one of words.
func wantInvalid(t testing.TB, err error, field string, words ...string) {
	t.Helper()
	var e *toolrouter.Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want *toolrouter.Error", err, err)
	}
	if e.Code != toolrouter.EINVALID || e.Field != field {
		t.Errorf("code/field = %q/%q, want %q/%q", e.Code, e.Field, toolrouter.EINVALID, field)
	}
	for _, w := range words {
		if !strings.Contains(e.Message, w) {
			t.Errorf("message %q does not contain %q", e.Message, w)
		}
	}
}

// fixture is one case of testdata/toolcalls.json.
type fixture struct {
	ID       string `json:"id"`
	Format   string `json:"format"`
	ToolCall any    `json:"tool_call"`
	Expect   struct {
		ToolName  string `json:"tool_name"`
		Arguments any    `json:"arguments"`
	} `json:"expect"`
}

func loadFixtures(t testing.TB) []fixture {
	t.Helper()
	b, err := os.ReadFile("testdata/toolcalls.json")
	if err != nil {
		t.Fatal(err)
	}
	var fs []fixture
	if err := json.Unmarshal(b, &fs); err != nil {
		t.Fatal(err)
	}
	return fs
}
