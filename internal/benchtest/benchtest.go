// Package benchtest drives an http.Handler in a benchmark loop without the
// harness allocating: the same request, body and ResponseWriter are reused
// on every call, so that allocs/op counts the handler's own. For tests and
// benchmarks only (no non-test file imports it).
package benchtest

import (
	"bytes"
	"net/http"
	"time"
)

// Writer is a ResponseWriter for a benchmark loop. Unlike
// httptest.ResponseRecorder it supports deadlines and flushing as the
// server's writer does (the recorder's "not supported" errors are
// allocations of the harness), and Reset makes it reusable.
type Writer struct {
	h    http.Header
	Code int          // the status written, 0 before anything was
	Body bytes.Buffer // what was written
}

// NewWriter returns an empty Writer.
func NewWriter() *Writer { return &Writer{h: http.Header{}} }

// Header returns the response header.
func (w *Writer) Header() http.Header { return w.h }

// WriteHeader records code unless a status was written before.
func (w *Writer) WriteHeader(code int) {
	if w.Code == 0 {
		w.Code = code
	}
}

// Write appends p to Body (status 200 unless one was written before).
func (w *Writer) Write(p []byte) (int, error) {
	if w.Code == 0 {
		w.Code = http.StatusOK
	}
	return w.Body.Write(p)
}

// Flush does nothing: everything is in Body already.
func (w *Writer) Flush() {}

// SetReadDeadline accepts any deadline.
func (w *Writer) SetReadDeadline(time.Time) error { return nil }

// SetWriteDeadline accepts any deadline.
func (w *Writer) SetWriteDeadline(time.Time) error { return nil }

// Reset empties the header, status and body for the next request.
func (w *Writer) Reset() {
	clear(w.h)
	w.Code = 0
	w.Body.Reset()
}

// body is a request body that can be rewound without allocating.
type body struct{ bytes.Reader }

func (*body) Close() error { return nil }

// Client sends the same request through a handler again and again, reusing
// the request, its body and the writer (net/http's server reuses its own
// per-connection state similarly).
type Client struct {
	h    http.Handler
	body []byte
	rb   body
	req  *http.Request
	w    *Writer
}

// NewClient returns a Client that sends req, with body as its body, to h.
func NewClient(h http.Handler, req *http.Request, body []byte) *Client {
	return &Client{h: h, body: body, req: req, w: NewWriter()}
}

// Do sends the request once and returns the writer holding the answer
// (valid until the next Do).
func (c *Client) Do() *Writer {
	c.rb.Reset(c.body)
	c.req.Body = &c.rb
	c.w.Reset()
	c.h.ServeHTTP(c.w, c.req)
	return c.w
}
