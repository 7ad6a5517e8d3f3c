package llm

import (
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Client is the HTTP client every provider request goes through (Send and
// the Bedrock adapter's SDK): it never follows a redirect — an answer
// 3xx is a *RedirectError, so that an API key set on the request never
// reaches the redirect's target — and it cuts a response body off after
// MaxResponseBytes with a *TooLargeError. It is safe for concurrent use.
type Client struct{ c *http.Client }

// NewClient is c (nil: NewHTTPClient()) refusing redirects and capping
// response bodies. c itself is not changed: a client shared with others
// keeps its own redirect policy.
func NewClient(c *http.Client) Client {
	if c == nil {
		c = NewHTTPClient()
	}
	cc := *c
	cc.CheckRedirect = refuseRedirect
	return Client{c: &cc}
}

func refuseRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Do sends req. A 3xx answer is closed and returned as a *RedirectError;
// the body of any other answer fails with a *TooLargeError once it passes
// MaxResponseBytes.
func (c Client) Do(req *http.Request) (*http.Response, error) {
	resp, err := c.c.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 && resp.StatusCode <= 399 && resp.StatusCode != http.StatusNotModified {
		_ = resp.Body.Close()
		return nil, &RedirectError{Status: resp.StatusCode, To: redirectTarget(req.URL, resp.Header.Get("Location"))}
	}
	resp.Body = &cappedBody{ReadCloser: resp.Body, limit: MaxResponseBytes}
	return resp, nil
}

// CloseIdleConnections closes the idle connections of the client's transport.
func (c Client) CloseIdleConnections() { c.c.CloseIdleConnections() }

// RedirectError is a provider's redirect, not followed.
type RedirectError struct {
	Status int
	To     string // scheme and host of the target only: its path and query may hold secrets
}

func (e *RedirectError) Error() string {
	to := e.To
	if to == "" {
		to = "an unknown location"
	}
	return "the provider answered " + strconv.Itoa(e.Status) + " redirecting to " + to + "; provider requests do not follow redirects (set base_url to the final address)"
}

// RetryableError tells the AWS SDK's retryer not to retry.
func (*RedirectError) RetryableError() bool { return false }

func redirectTarget(base *url.URL, loc string) string {
	if loc == "" {
		return ""
	}
	u, err := base.Parse(loc)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// TooLargeError is a response body longer than MaxResponseBytes.
type TooLargeError struct{}

func (*TooLargeError) Error() string {
	return "response body exceeds " + strconv.Itoa(MaxResponseBytes>>20) + " MiB"
}

// RetryableError tells the AWS SDK's retryer not to retry.
func (*TooLargeError) RetryableError() bool { return false }

// cappedBody fails with a *TooLargeError when more than limit bytes are
// read; it never hands out a byte past the limit.
type cappedBody struct {
	io.ReadCloser
	n, limit int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.n > b.limit {
		return 0, &TooLargeError{}
	}
	if room := b.limit + 1 - b.n; int64(len(p)) > room {
		p = p[:room]
	}
	k, err := b.ReadCloser.Read(p)
	b.n += int64(k)
	if b.n > b.limit {
		return k - int(b.n-b.limit), &TooLargeError{}
	}
	return k, err
}

// minSecret is the shortest secret Redactor replaces: a one-letter
// "secret" (a test's, a placeholder) would garble every word holding it.
const minSecret = 4

// Redactor is a function replacing each of secrets (blank and shorter
// than 4 bytes ignored) in a text with "[REDACTED]", longest first, as
// they are and percent-encoded.
func Redactor(secrets ...string) func(string) string {
	var olds []string
	for _, s := range secrets {
		if s = strings.TrimSpace(s); len(s) < minSecret {
			continue
		}
		olds = append(olds, s)
		if q := url.QueryEscape(s); q != s {
			olds = append(olds, q)
		}
		if p := url.PathEscape(s); p != s {
			olds = append(olds, p)
		}
	}
	if len(olds) == 0 {
		return func(s string) string { return s }
	}
	// Longest first: a secret containing another is replaced whole.
	for i := 1; i < len(olds); i++ {
		for j := i; j > 0 && len(olds[j]) > len(olds[j-1]); j-- {
			olds[j], olds[j-1] = olds[j-1], olds[j]
		}
	}
	return func(s string) string {
		for _, o := range olds {
			s = strings.ReplaceAll(s, o, "[REDACTED]")
		}
		return s
	}
}

// minURLSecret is the shortest query value URLSecrets reports: shorter
// ones ("v=1", "alt=json") are not credentials, and replacing them would
// garble every message.
const minURLSecret = 6

// URLSecrets are the parts of a URL that may be credentials: the
// password of its user info, and the values of its query string (at
// least minURLSecret bytes long), raw and decoded. A user name of at least
// minURLSecret bytes counts too (https://KEY@host).
func URLSecrets(raw string) []string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil
	}
	var out []string
	if u.User != nil {
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		}
		if n := u.User.Username(); len(n) >= minURLSecret {
			out = append(out, n)
		}
	}
	for _, kv := range strings.Split(u.RawQuery, "&") {
		_, v, _ := strings.Cut(kv, "=")
		if len(v) < minURLSecret {
			continue
		}
		out = append(out, v)
		if d, err := url.QueryUnescape(v); err == nil && d != v {
			out = append(out, d)
		}
	}
	return out
}
