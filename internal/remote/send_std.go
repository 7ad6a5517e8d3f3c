//go:build !ownroundtrip

package remote

import "net/http"

// send sends hreq through the client (redirects returned, never followed).
func (c *Client) send(hreq *http.Request) (*http.Response, error) { return c.hc.Do(hreq) }
