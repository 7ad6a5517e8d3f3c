package suggest

import "testing"

func TestClosest(t *testing.T) {
	tools := []string{"get_weather", "get_time", "send_email", "ls"}
	for _, tc := range []struct {
		name  string
		cands []string
		want  string
		ok    bool
	}{
		{"get_wether", tools, "get_weather", true},  // a letter missing
		{"get_waether", tools, "get_weather", true}, // two swapped: one edit
		{"send_emial", tools, "send_email", true},
		{"get_tiem", tools, "get_time", true},
		{"get_weather", tools, "", false}, // known: nothing to suggest
		{"delete_all", tools, "", false},  // nothing close
		{"lx", tools, "ls", true},         // one edit in a short name
		{"xy", tools, "", false},          // two edits in a short name
		{"l", []string{"x"}, "", false},   // never "close" to a one-letter name
		{"ADRR", []string{"ADDR", "STORE"}, "ADDR", true},
		{"REGSITRY", []string{"REGISTRY", "STORE"}, "REGISTRY", true},
		{"abcdef", []string{"abcxyz"}, "", false}, // three edits in six characters
		{"openia", []string{"openai", "anthropic"}, "openai", true},
		{"anything", nil, "", false},
	} {
		got, ok := Closest(tc.name, tc.cands)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Closest(%q) = %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// TestClosestTiesAreOrderFree: of two candidates equally close, the first
// in byte order wins whatever the order given.
func TestClosestTiesAreOrderFree(t *testing.T) {
	a, _ := Closest("cat", []string{"car", "bat"})
	b, _ := Closest("cat", []string{"bat", "car"})
	if a != "bat" || b != "bat" {
		t.Errorf("ties: %q and %q, want bat both times", a, b)
	}
}
