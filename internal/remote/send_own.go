//go:build ownroundtrip

package remote

import (
	"crypto/tls"
	"fmt"
	"net/http"
)

// send sends hreq through the transport and does what http.Client
// would do for it, redirects aside (none is ever followed).
func (c *Client) send(hreq *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(hreq)
	if err != nil {
		if tlsErr, ok := err.(tls.RecordHeaderError); ok && string(tlsErr.RecordHeader[:]) == "HTTP/" {
			err = http.ErrSchemeMismatch
		}
		return nil, err
	}
	if resp == nil {
		return nil, fmt.Errorf("http: RoundTripper implementation (%T) returned a nil *Response with a nil error", c.rt)
	}
	if resp.Body == nil {
		if resp.ContentLength > 0 {
			return nil, fmt.Errorf("http: RoundTripper implementation (%T) returned a *Response with content length %d but a nil Body", c.rt, resp.ContentLength)
		}
		resp.Body = http.NoBody
	}
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		// http.Client parses the Location of a redirect before it asks
		// whether to follow it, and fails the request when it cannot.
		if loc := resp.Header.Get("Location"); loc != "" {
			if _, err := hreq.URL.Parse(loc); err != nil {
				_ = resp.Body.Close()
				return nil, fmt.Errorf("failed to parse Location header %q: %v", loc, err)
			}
		}
	}
	return resp, nil
}
