//go:build sdkmcpserver

package mcpserver

// sdkServerOnly is true (-tags sdkmcpserver): every request goes through
// the go-sdk, never the fast path (fastcall.go).
const sdkServerOnly = true
