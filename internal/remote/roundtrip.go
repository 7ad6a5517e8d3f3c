//go:build !remotehttpclient

package remote

import (
	"crypto/tls"
	"fmt"
	"net/http"
)

// roundTrip sends hreq on the transport and returns its reply as
// http.Client.Do does for a client whose CheckRedirect returns
// http.ErrUseLastResponse (its do and send, Go 1.26): a plain-HTTP reply
// to an https request is http.ErrSchemeMismatch, a reply without a body
// has an empty one, and a redirect it would follow whose Location does not
// parse is an error. Unlike Do it keeps no copy of the request's headers
// for redirects (3 allocations, ~900 bytes per call) and wraps no error in
// a *url.Error (innerURLError took it off).
//
// Built with -tags remotehttpclient, requests go through an http.Client
// again (the ablation, roundtrip_client.go).
func (c *Client) roundTrip(hreq *http.Request) (*http.Response, error) {
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
	case http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		if hreq.GetBody == nil && hreq.ContentLength != 0 {
			return resp, nil // a redirect http.Client would not follow either
		}
		fallthrough
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther:
		if loc := resp.Header.Get("Location"); loc != "" {
			if _, err := hreq.URL.Parse(loc); err != nil {
				closeBody(resp.Body)
				return nil, fmt.Errorf("failed to parse Location header %q: %v", loc, err) // %v: as http.Client words it
			}
		}
	}
	return resp, nil
}
