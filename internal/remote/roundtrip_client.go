//go:build remotehttpclient

package remote

import "net/http"

// roundTrip sends hreq through an http.Client that follows no redirect,
// as the client did before roundtrip.go (the ablation, -tags
// remotehttpclient; bench/README.md decision table). The http.Client is
// made per call (the Client keeps no field for it): one small allocation
// more than before.
func (c *Client) roundTrip(hreq *http.Request) (*http.Response, error) {
	hc := &http.Client{Transport: c.rt, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return hc.Do(hreq)
}
