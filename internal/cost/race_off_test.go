//go:build !race

package cost_test

const raceEnabled = false
