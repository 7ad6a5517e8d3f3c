package httpapi

import (
	"io"
	"net/http"
	"strings"
	"time"
)

// expectContinue reads the unread rest of the body of a request sent with
// "Expect: 100-continue" before an answer that did not read it (a 401, 404,
// 415, a bad parameter) goes out.
//
// A client may send the body without waiting for "100 Continue" (RFC 9110
// §10.1.1). net/http closes the connection right after answering such a
// request whose body it did not read, without the lingering close it does
// for other early answers, so the client's body arrives at a closed socket:
// the kernel answers with a reset and the client, still writing, often
// loses the answer ("write: broken pipe"). Reading the body first (bounded
// by the body limit and the body read timeout, like an accepted request)
// keeps the connection usable; a body over the limit makes net/http close
// it the lingering way.
//
// The middleware must come first: the limit is reported to net/http's own
// ResponseWriter.
func expectContinue(maxBody int64, timeout time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Body == nil || r.Body == http.NoBody || !strings.EqualFold(r.Header.Get("Expect"), "100-continue") {
				next.ServeHTTP(w, r)
				return
			}
			body := &countingBody{ReadCloser: r.Body}
			r.Body = body
			next.ServeHTTP(&drainingWriter{ResponseWriter: w, body: body, maxBody: maxBody, timeout: timeout}, r)
		})
	}
}

// countingBody counts what the handler read of a body and whether it saw
// its end.
type countingBody struct {
	io.ReadCloser
	n   int64
	eof bool
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

// drainingWriter reads the rest of the body before the answer's status line
// is written.
type drainingWriter struct {
	http.ResponseWriter
	body    *countingBody
	maxBody int64
	timeout time.Duration
	drained bool
}

func (d *drainingWriter) drain() {
	if d.drained || d.body.eof {
		return
	}
	d.drained = true
	setReadDeadline(d.ResponseWriter, time.Now().Add(d.timeout))
	// Over the limit, net/http's ResponseWriter learns it from
	// MaxBytesReader and closes the connection after a lingering wait.
	_, _ = io.Copy(io.Discard, http.MaxBytesReader(d.ResponseWriter, d.body, max(0, d.maxBody-d.body.n)))
	setReadDeadline(d.ResponseWriter, time.Time{})
}

func (d *drainingWriter) WriteHeader(code int) {
	if code >= 200 {
		d.drain()
	}
	d.ResponseWriter.WriteHeader(code)
}

func (d *drainingWriter) Write(p []byte) (int, error) {
	d.drain()
	return d.ResponseWriter.Write(p)
}

func (d *drainingWriter) Flush() {
	d.drain()
	_ = http.NewResponseController(d.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach net/http's writer.
func (d *drainingWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }
