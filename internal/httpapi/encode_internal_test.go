package httpapi

import (
	"bytes"
	"encoding/json"
	"testing"
)

type pair struct {
	A string `json:"a"`
	B []byte `json:"b,omitempty"`
}

type lazy []int

func (l lazy) Len() int       { return len(l) }
func (l lazy) Item(i int) any { return map[string]int{"n": l[i]} }

// encodeObject writes exactly what json.Encoder writes for the same map.
func TestEncodeObjectIsEncode(t *testing.T) {
	for _, m := range []map[string]any{
		{},
		{"results": []*pair{}},
		{"results": []*pair(nil)},
		{"results": []*pair{{A: "<x>&"}, nil, {A: "é\u2028", B: []byte{1, 2}}}, "provider": "openai"},
		{"raw": []byte("bytes"), "n": 1.5, "nested": map[string]any{"l": []any{1, "two"}}, "z": []string{"a"}},
	} {
		var want bytes.Buffer
		if err := json.NewEncoder(&want).Encode(m); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := encodeObject(&got, m); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("encodeObject\n got %s\nwant %s", got.String(), want.String())
		}
	}
	var got bytes.Buffer
	if err := encodeObject(&got, map[string]any{"tools": lazy{1, 2}, "e": lazy{}}); err != nil {
		t.Fatal(err)
	}
	if want := `{"e":[],"tools":[{"n":1},{"n":2}]}` + "\n"; got.String() != want {
		t.Errorf("lists: %s, want %s", got.String(), want)
	}
}
