package shape_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/shape"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// BenchmarkOutputTokenBudget: 150 kB repetitive outputs under a 40k-token
// budget (issue 32, finding 4: spaces took 42 s, capitals 56 s).
func BenchmarkOutputTokenBudget(b *testing.B) {
	s := shape.New()
	if _, err := s.Tokens("warm"); err != nil {
		b.Fatal(err)
	}
	for name, text := range map[string]string{
		"spaces":   strings.Repeat(" ", 150_000) + "x",
		"capitals": strings.Repeat("A", 150_000),
		"json":     strings.Repeat(`{"id":1,"name":"x"},`, 7500),
		"prose":    strings.Repeat("The quick brown fox. ", 7500),
	} {
		raw, _ := json.Marshal(text)
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				s.Output(raw, toolrouter.OutputBudget{Tokens: 40_000}, "GET /results/tc_b")
			}
		})
	}
}
