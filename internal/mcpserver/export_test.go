package mcpserver

// SetSDKCalls sends every request of h through the go-sdk (on) or lets
// single tools/call take the fast path (off).
func SetSDKCalls(h *Handler, on bool) { h.sdkCalls = on }

// FastCalls is how many requests h answered on the fast path.
func FastCalls(h *Handler) int64 { return h.fastCalls.Load() }
