//go:build race

package httpapi

const raceOn = true
