//go:build !sdkmcpserver

package mcpserver

// sdkServerOnly is false: a single tools/call of protocol 2026-07-28 takes
// the fast path (fastcall.go). Build with -tags sdkmcpserver to answer
// every request through the go-sdk (the ablation of bench/README.md's
// decision table).
const sdkServerOnly = false
