package inputschema_test

import (
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/inputschema"
)

func TestValidator(t *testing.T) {
	t.Parallel()
	validate, err := inputschema.Validator(map[string]any{
		"$schema":    "http://json-schema.org/draft-07/schema#",
		"type":       "object",
		"properties": map[string]any{"n": map[string]any{"type": "number"}},
		"required":   []any{"n"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := validate(map[string]any{"n": 1.0}); err != nil {
		t.Error(err)
	}
	if err := validate(map[string]any{}); err == nil || !strings.Contains(err.Error(), "n") {
		t.Errorf("missing n: %v", err)
	}
	if _, err := inputschema.Validator(map[string]any{"type": 7}); err == nil || !strings.Contains(err.Error(), "invalid JSON Schema") {
		t.Errorf("bad schema: %v", err)
	}
	if _, err := inputschema.Validator(map[string]any{"$ref": "http://example.com/s.json"}); err == nil {
		t.Error("an external $ref compiled")
	}
	if v, err := inputschema.Validator(nil); err != nil || v(nil) != nil {
		t.Errorf("nil schema: %v", err)
	}
}
