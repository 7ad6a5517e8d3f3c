package randid_test

import (
	"regexp"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/randid"
)

func TestHex(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(`^[0-9a-f]{24}$`)
	seen := map[string]bool{}
	for range 100 {
		id := randid.Hex(12)
		if !re.MatchString(id) || seen[id] {
			t.Fatalf("Hex(12) = %q (seen before: %v)", id, seen[id])
		}
		seen[id] = true
	}
	if id := randid.Hex(0); id != "" {
		t.Errorf("Hex(0) = %q", id)
	}
}
