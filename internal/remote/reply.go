package remote

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/toolrouterd/toolrouterd/internal/outbound"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

const (
	// chunkSize is the unit in which replies of unknown length are read.
	chunkSize = 32 << 10
	// errBodyLimit bounds how much of a non-2xx reply is read to find its
	// error text.
	errBodyLimit = 64 << 10
	// errTextLimit bounds the error text taken from a non-2xx reply.
	errTextLimit = 1 << 10
	// nonJSONPrefix is how much of a non-JSON 2xx reply the error quotes.
	nonJSONPrefix = 200
	// drainLimit bounds how much of an unread body is discarded so that its
	// connection can be reused; a longer rest closes the connection instead.
	drainLimit = 64 << 10
)

var chunkPool = sync.Pool{New: func() any {
	b := make([]byte, chunkSize)
	return &b
}}

// readReply reads a reply body of at most limit bytes. tooLarge reports a
// longer body, read no further than limit+1 bytes (not at all when the
// declared contentLength already exceeds limit). Bodies of unknown length
// are read in pooled chunks and copied once into an exactly sized slice, so
// memory stays proportional to the reply, never to what the tool sends
// (a growing buffer would allocate several times a large reply:
// TestCallHugeReplyKeepsMemoryBounded).
//
// reserve, when not nil, is asked for every chunk of a body of unknown
// length before the next is read; when it refuses, readReply stops with
// errNoBudget, having read no more than what reserve granted plus a chunk.
func readReply(r io.Reader, contentLength, limit int64, reserve func(n int64) bool) (data []byte, tooLarge bool, err error) {
	if contentLength > limit {
		return nil, true, nil
	}
	if contentLength >= 0 {
		data = make([]byte, contentLength)
		if _, err := io.ReadFull(r, data); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, false, err
		}
		return data, false, nil
	}

	var chunks []*[]byte
	defer func() {
		for _, c := range chunks {
			chunkPool.Put(c)
		}
	}()
	var total int64
	last := 0 // bytes in the last chunk
	for {
		cp := chunkPool.Get().(*[]byte)
		chunks = append(chunks, cp)
		buf := (*cp)[:min(int64(chunkSize), limit+1-total)]
		n, rerr := 0, error(nil)
		for n < len(buf) && rerr == nil {
			var m int
			m, rerr = r.Read(buf[n:])
			n += m
		}
		total += int64(n)
		last = n
		if total > limit {
			return nil, true, nil
		}
		if reserve != nil && !reserve(int64(n)) {
			return nil, false, errNoBudget
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return nil, false, rerr
		}
	}
	data = make([]byte, 0, total)
	for i, c := range chunks {
		if i == len(chunks)-1 {
			data = append(data, (*c)[:last]...)
		} else {
			data = append(data, *c...)
		}
	}
	return data, false, nil
}

// errNoBudget stops reading a reply that the call's Budget cannot hold.
var errNoBudget = errors.New("output budget exhausted")

// closeBody discards a bounded rest of the body, so that the connection can
// go back to the idle pool, and closes it.
func closeBody(body io.ReadCloser) {
	_, _ = io.CopyN(io.Discard, body, drainLimit)
	_ = body.Close()
}

// statusFailure is the failure of a non-2xx reply.
func statusFailure(resp *http.Response) toolrouter.Outcome {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, errBodyLimit+1))
	text, structured := errorText(raw, len(raw) > errBodyLimit)
	if text == "" {
		text = resp.Status
		if text == "" || strings.TrimSpace(text) == fmt.Sprint(resp.StatusCode) {
			text = fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
		}
		text = strings.TrimSpace(text)
	}
	cat, ok := toolrouter.ClassifyStatus(resp.StatusCode)
	if !ok {
		cat = toolrouter.ClassifyError(text)
		if cat == toolrouter.CategoryUnknown {
			cat = toolrouter.CategoryExecution
		}
	}
	return toolrouter.Outcome{Err: text, Category: cat, Status: resp.StatusCode, Answered: structured}
}

// errorText is the error message of a non-2xx reply body: its JSON `error`
// (a string, or an object's `message`), else its `message`, else the body
// text; "" when the body is blank. cut reports a body read only in part.
// structured reports an error the tool reported in JSON, as opposed to a
// crash page or an empty reply.
func errorText(raw []byte, cut bool) (text string, structured bool) {
	if !cut {
		if s := outbound.ErrorMessage(raw); s != "" {
			return truncate(s, errTextLimit), true
		}
	}
	return truncate(string(bytes.TrimSpace(raw)), errTextLimit), false
}

// truncate cuts s to at most n bytes on a rune boundary and replaces
// invalid UTF-8.
func truncate(s string, n int) string {
	if len(s) > n {
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n]
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// jsonContentType reports whether a reply's Content-Type allows JSON:
// absent, application/json or any +json type (RFC 6839).
func jsonContentType(ct string) bool {
	if ct == "" || strings.EqualFold(ct, "application/json") { // the common cases, without parsing
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// validUTF8 returns data with every byte that is not part of valid UTF-8
// replaced by U+FFFD (encoding/json's rule for strings; in valid JSON such
// bytes can only be inside strings), reusing data when it is valid.
func validUTF8(data []byte) (_ []byte, replaced bool) {
	if utf8.Valid(data) {
		return data, false
	}
	out := make([]byte, 0, len(data)+len(data)/8)
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			out = append(out, "\uFFFD"...)
		} else {
			out = append(out, data[i:i+size]...)
		}
		i += size
	}
	return out, true
}
