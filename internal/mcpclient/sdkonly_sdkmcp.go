//go:build sdkmcp

package mcpclient

// sdkOnly is true (-tags sdkmcp): every tools/call goes through the SDK,
// never the hot path (fastcall.go).
const sdkOnly = true
