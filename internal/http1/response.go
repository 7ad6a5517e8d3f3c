package http1

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// bufferBody is how much of a body is held back to send it with a
// Content-Length; a longer one, or one flushed, goes out chunked.
const bufferBody = 4 << 10

// response is the http.ResponseWriter of one request. It also has the
// methods http.ResponseController looks for: FlushError and the deadlines.
type response struct {
	c             *conn
	req           *http.Request
	body          *requestBody // nil when the request has none
	header        http.Header
	status        int
	wroteHeader   bool  // the handler's status is set
	headerSent    bool  // status line and header are in the connection's buffer
	chunked       bool  // the body goes out in chunks
	closeAfter    bool  // the connection closes after this response
	deadlines     bool  // the handler set a deadline of the connection
	contentLength int64 // declared by the handler, -1 when not
	written       int64 // body bytes the handler wrote
	buf           []byte
	err           error // the connection's first write error
}

func (w *response) Header() http.Header { return w.header }

func (w *response) WriteHeader(code int) {
	if w.wroteHeader {
		return
	}
	if code < 100 || code > 999 {
		panic("invalid WriteHeader code " + strconv.Itoa(code)) // as http.Server
	}
	if code < 101 || code > 199 {
		// A final status (or the handler's own 100) goes before the
		// automatic 100 Continue, which is not sent then (http.Server).
		if b := w.body; b != nil && b.continueW != nil {
			b.continueW, b.noContinue = nil, true
		}
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		// Informational: sent at once, the final status comes later.
		w.writeStatusAndHeader(code)
		w.c.bw.WriteString("\r\n")
		w.setErr(w.c.bw.Flush())
		return
	}
	w.wroteHeader, w.status = true, code
	if te := w.header.Get("Transfer-Encoding"); te != "" && te != "identity" {
		w.header.Del("Content-Length") // chunked wins, as http.Server
	}
	if cl := w.header.Get("Content-Length"); cl != "" {
		if v, err := strconv.ParseInt(cl, 10, 64); err == nil && v >= 0 {
			w.contentLength = v
		} else {
			w.header.Del("Content-Length")
		}
	}
}

func (w *response) bodyAllowed() bool {
	return w.status >= 200 && w.status != http.StatusNoContent && w.status != http.StatusNotModified
}

func (w *response) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if !w.bodyAllowed() {
		return 0, http.ErrBodyNotAllowed
	}
	if w.contentLength >= 0 && w.written+int64(len(p)) > w.contentLength {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	n := len(p)
	if !w.headerSent {
		if len(w.buf)+len(p) <= bufferBody {
			w.buf = append(w.buf, p...)
			return len(p), nil
		}
		if len(w.buf) == 0 {
			w.buf = append(w.buf, p[:min(len(p), 512)]...) // to sniff its type
			p = p[len(w.buf):]
		}
		if w.req.Method == http.MethodHead {
			return n, nil // counted; sent without a length at the end
		}
		if err := w.sendHeader(false); err != nil {
			return 0, err
		}
	}
	if w.req.Method == http.MethodHead {
		return n, nil
	}
	if err := w.writeBody(p); err != nil {
		return 0, err
	}
	return n, nil
}

func (w *response) writeBody(p []byte) error {
	bw := w.c.bw
	if w.chunked {
		bw.WriteString(strconv.FormatInt(int64(len(p)), 16))
		bw.WriteString("\r\n")
		bw.Write(p)
		bw.WriteString("\r\n")
	} else {
		bw.Write(p)
	}
	_, err := bw.Write(nil) // bufio keeps a failed flush's error
	return w.setErr(err)
}

func (w *response) setErr(err error) error {
	if err != nil && w.err == nil {
		w.err = err
		w.closeAfter = true
	}
	return w.err
}

// Flush sends the header and what the body holds now.
func (w *response) Flush() { _ = w.FlushError() }

func (w *response) FlushError() error {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.headerSent {
		if err := w.sendHeader(false); err != nil {
			return err
		}
	}
	return w.setErr(w.c.bw.Flush())
}

func (w *response) SetReadDeadline(t time.Time) error {
	w.deadlines = true
	return w.c.nc.SetReadDeadline(t)
}

func (w *response) SetWriteDeadline(t time.Time) error {
	w.deadlines = true
	return w.c.nc.SetWriteDeadline(t)
}

// sendHeader puts the status line and header in the connection's buffer,
// then the body held back. final: the handler returned, so the held body
// is all of it and its length is known.
func (w *response) sendHeader(final bool) error {
	h := w.header
	if _, ok := h["Date"]; !ok {
		h["Date"] = []string{w.c.s.now()}
	}
	// The body's framing is the server's: a Transfer-Encoding the handler
	// set is not sent as is (as http.Server: chunked, or "identity" for a
	// body that ends with the connection).
	te := h.Get("Transfer-Encoding")
	delete(h, "Transfer-Encoding")
	switch {
	case !w.bodyAllowed():
		if w.status == http.StatusNoContent {
			delete(h, "Content-Length")
		}
	case w.contentLength >= 0:
	case w.req.Method == http.MethodHead:
		if final && te == "" && w.written > 0 && w.written <= bufferBody {
			h["Content-Length"] = []string{strconv.FormatInt(w.written, 10)}
		}
	case final && te == "":
		h["Content-Length"] = []string{strconv.FormatInt(w.written, 10)}
	case w.req.ProtoAtLeast(1, 1) && te != "identity":
		w.chunked = true
		h["Transfer-Encoding"] = []string{"chunked"}
	default:
		w.closeAfter = true // a body of unknown length ends with the connection
	}
	switch {
	case w.closeAfter || h.Get("Connection") == "close":
		w.closeAfter = true
		h["Connection"] = []string{"close"}
	case !w.req.ProtoAtLeast(1, 1):
		h["Connection"] = []string{"keep-alive"} // an HTTP/1.0 client that asked for it
	}
	if _, ok := h["Content-Type"]; !ok && te == "" && w.bodyAllowed() && len(w.buf) > 0 && h.Get("Content-Encoding") == "" {
		h["Content-Type"] = []string{http.DetectContentType(w.buf)}
	}
	w.writeStatusAndHeader(w.status)
	w.c.bw.WriteString("\r\n")
	w.headerSent = true
	if len(w.buf) > 0 && w.req.Method != http.MethodHead {
		err := w.writeBody(w.buf)
		w.buf = w.buf[:0]
		return err
	}
	return w.err
}

// writeStatusAndHeader writes the status line and header fields, each
// value with its line breaks turned to spaces (no header injection).
func (w *response) writeStatusAndHeader(code int) {
	bw := w.c.bw
	bw.WriteString("HTTP/1.1 ")
	bw.WriteString(strconv.Itoa(code))
	bw.WriteByte(' ')
	if text := http.StatusText(code); text != "" {
		bw.WriteString(text)
	} else {
		bw.WriteString("status code ")
		bw.WriteString(strconv.Itoa(code))
	}
	bw.WriteString("\r\n")
	for k, vv := range w.header {
		if !validFieldName(k) {
			continue
		}
		for _, v := range vv {
			bw.WriteString(k)
			bw.WriteString(": ")
			if strings.ContainsAny(v, "\r\n") {
				v = strings.NewReplacer("\r", " ", "\n", " ").Replace(v)
			}
			bw.WriteString(strings.TrimSpace(v))
			bw.WriteString("\r\n")
		}
	}
}

// finish ends the response after the handler returned.
func (w *response) finish() error {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.headerSent {
		w.sendHeader(true)
	}
	if w.chunked {
		w.c.bw.WriteString("0\r\n\r\n")
	}
	if w.contentLength >= 0 && w.written < w.contentLength && w.bodyAllowed() && w.req.Method != http.MethodHead {
		w.closeAfter = true // shorter than declared: the client cannot tell where it ends
	}
	err := w.setErr(w.c.bw.Flush())
	if w.deadlines {
		_ = w.c.nc.SetReadDeadline(time.Time{})
		_ = w.c.nc.SetWriteDeadline(time.Time{})
	}
	return err
}

func validFieldName(k string) bool {
	for i := 0; i < len(k); i++ {
		if c := k[i]; c <= ' ' || c == ':' || c >= 0x7f {
			return false
		}
	}
	return k != ""
}

// now is the Date header's value, formatted once a second.
func (s *Server) now() string {
	t := time.Now().Unix()
	if d := s.date.Load(); d != nil && d.unix == t {
		return d.text
	}
	d := &date{unix: t, text: time.Unix(t, 0).UTC().Format(http.TimeFormat)}
	s.date.Store(d)
	return d.text
}

type date struct {
	unix int64
	text string
}
