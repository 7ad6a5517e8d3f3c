//go:build !sdkmcp

package mcpclient

// sdkOnly is false: tools/call on streamable HTTP sessions before protocol
// 2026-07-28 takes the hot path (fastcall.go). Build with -tags sdkmcp to
// send every call through the SDK (the ablation of bench/README.md).
const sdkOnly = false
