package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
)

// Defaults of DiscoveryLimits (docs/mcp.md "Discovery limits").
const (
	DefaultDiscoveryPages = 100
	DefaultDiscoveryTools = 1000
	DefaultDiscoveryBytes = 16 << 20
)

// DiscoveryLimits bound one discovery of a server: the pages of its
// tools/list (a new nextCursor every time is followed at most Pages
// times), the tools those pages hold, and the bytes of their answers as
// read from the wire (a remote server's; a stdio server's messages are
// bounded by its transport). A discovery past one of them stops: the
// server's last good listing is kept, a warning is logged and
// toolrouter_mcp_discovery_limited_total{server,limit} counts it. The
// same bounds will hold for resources, prompts and skills lists when
// toolrouterd lists them. Zero fields take the defaults.
type DiscoveryLimits struct {
	Pages int
	Tools int
	Bytes int64
}

func (l DiscoveryLimits) withDefaults() DiscoveryLimits {
	if l.Pages <= 0 {
		l.Pages = DefaultDiscoveryPages
	}
	if l.Tools <= 0 {
		l.Tools = DefaultDiscoveryTools
	}
	if l.Bytes <= 0 {
		l.Bytes = DefaultDiscoveryBytes
	}
	return l
}

// limitError is a discovery stopped at one of its limits.
type limitError struct {
	limit string // pages, tools or bytes
	max   int64
}

func (e *limitError) Error() string {
	return fmt.Sprintf("tools/list: the server's listing exceeds the discovery limit of %d %s", e.max, e.limit)
}

// limited reports the limit err stopped a discovery at, if it did.
func limited(err error) *limitError {
	var le *limitError
	if errors.As(err, &le) {
		return le
	}
	return nil
}

// readBudget is what the answers of one discovery may still hold, in
// bytes; the transport counts the bodies of the requests whose context
// carries it.
type readBudget struct {
	left     atomic.Int64
	exceeded atomic.Bool
}

type budgetKey struct{}

func withBudget(ctx context.Context, b *readBudget) context.Context {
	return context.WithValue(ctx, budgetKey{}, b)
}

func budgetFrom(ctx context.Context) *readBudget {
	b, _ := ctx.Value(budgetKey{}).(*readBudget)
	return b
}

var errReadBudget = errors.New("the answer exceeds the discovery's byte limit")

// budgeted holds resp, the answer to r, to the budget of r's discovery,
// if r is part of one. A JSON answer is read here, at most the bytes
// left: one over them is replaced by a JSON-RPC error answering r, so
// that the SDK neither reads nor decodes it and the session stays up. An
// event stream fails once the budget is spent (the SDK also bounds each
// event, at 16 MiB).
func budgeted(r *http.Request, resp *http.Response) {
	b := budgetFrom(r.Context())
	if b == nil || resp.Body == nil || resp.StatusCode != http.StatusOK {
		return
	}
	if isEventStream(resp.Header.Get("Content-Type")) {
		resp.Body = &budgetBody{ReadCloser: resp.Body, b: b}
		return
	}
	left := b.left.Load()
	data, err := io.ReadAll(io.LimitReader(resp.Body, max(left, 0)+1))
	if err == nil && int64(len(data)) <= left {
		b.left.Add(-int64(len(data)))
		resp.Body = readCloser{bytes.NewReader(data), resp.Body}
		return
	}
	_ = resp.Body.Close()
	if err != nil {
		resp.Body = readCloser{io.MultiReader(bytes.NewReader(data), errReader{err}), io.NopCloser(nil)}
		return
	}
	b.exceeded.Store(true)
	id := json.RawMessage("null")
	if r.GetBody != nil {
		if body, err := r.GetBody(); err == nil {
			var req struct {
				ID json.RawMessage `json:"id"`
			}
			if json.NewDecoder(io.LimitReader(body, 1<<20)).Decode(&req) == nil && len(req.ID) > 0 {
				id = req.ID
			}
			_ = body.Close()
		}
	}
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": -32603, "message": errReadBudget.Error()}})
	resp.Body = io.NopCloser(bytes.NewReader(msg))
	resp.ContentLength = int64(len(msg))
	resp.Header.Del("Content-Length")
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// budgetBody is an event stream that fails once its budget is spent.
type budgetBody struct {
	io.ReadCloser
	b *readBudget
}

func (r *budgetBody) Read(p []byte) (int, error) {
	if r.b.exceeded.Load() {
		return 0, errReadBudget
	}
	n, err := r.ReadCloser.Read(p)
	if r.b.left.Add(-int64(n)) < 0 {
		r.b.exceeded.Store(true)
		return 0, errReadBudget
	}
	return n, err
}
