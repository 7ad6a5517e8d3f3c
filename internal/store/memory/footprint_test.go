package memory_test

import (
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/store/storebench"
)

// BenchmarkFootprint drives the store directly with a million routed calls
// (storebench.Route: a result and its audit record each) and reports RSS
// and live heap at 100k, 500k and 1M calls (issue 37: flat). Run with
// -benchtime=1x: the calls are fixed, not b.N.
func BenchmarkFootprint(b *testing.B) {
	for b.Loop() {
		storebench.Footprint(b, memory.New(), 100_000, 500_000, 1_000_000)
	}
}
