//go:build race

package httpapi_test

// raceEnabled: the race detector drops sync.Pool items at random, so
// allocation counts are not exact.
const raceEnabled = true
