package main

import (
	"runtime/debug"
	"strconv"
	"strings"
)

// cgroupMemoryFiles hold the container's memory limit: cgroup v2, then v1.
var cgroupMemoryFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// memoryLimitShare is the part of the container's memory limit given to
// the Go runtime as its soft limit; the rest is headroom for what the
// runtime does not count (C allocations of SQLite, stacks of threads).
const memoryLimitShare = 0.9

// setMemoryLimit sets the Go runtime's soft memory limit to 90% of the
// container's memory limit, unless GOMEMLIMIT is set (the runtime then
// obeys it already) or there is no limit. It returns the limit set, 0 when
// none was. A process near its container's limit then collects garbage
// harder instead of being killed (issue 14, item 5).
func setMemoryLimit(getenv func(string) string, readFile func(string) ([]byte, error)) int64 {
	if getenv("GOMEMLIMIT") != "" {
		return 0
	}
	for _, f := range cgroupMemoryFiles {
		b, err := readFile(f)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n <= 0 || n >= 1<<50 { // "max", or v1's "unlimited" (a huge number)
			return 0
		}
		limit := int64(float64(n) * memoryLimitShare)
		debug.SetMemoryLimit(limit)
		return limit
	}
	return 0
}

// defaultGCPercent is the GOGC toolrouterd runs with when GOGC is unset.
// The heap of a route is short-lived garbage; collecting at 3x the live
// heap instead of 2x (Go's default, 100) spares about 10% of the
// instructions of a route (callgrind, toolrouterd serving /route on
// memory:// to test/echo: ~259k -> ~232k per request, two interleaved
// pairs) for a few MB more at full speed (peak RSS on sqlite:// 52 -> 55
// MB). Memory stays bounded: the heap goal is still a multiple of the live
// heap, and the soft limit (setMemoryLimit, GOMEMLIMIT) caps it in a
// container.
const defaultGCPercent = 200

// setGCPercent sets the collector's target to defaultGCPercent unless GOGC
// is set (the runtime then obeys it already). It returns the percentage
// set, 0 when none was.
func setGCPercent(getenv func(string) string) int {
	if getenv("GOGC") != "" {
		return 0
	}
	debug.SetGCPercent(defaultGCPercent)
	return defaultGCPercent
}
