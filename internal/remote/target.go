package remote

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
)

// maxTargets bounds the endpoint cache. Registries hold far fewer
// endpoints; the bound only keeps a long run of reloads that keep changing
// endpoints from growing it forever (a full cache is simply started anew).
const maxTargets = 1024

// target is a parsed tool endpoint: a request template that every call to
// the endpoint copies, so that the endpoint is parsed once, not per call.
// It is never modified once cached.
type target struct {
	tmpl *http.Request
	// basicAuth is the Authorization value of the endpoint's userinfo
	// ("Basic …"), "" when it has none.
	basicAuth string
}

// targetCache maps endpoint strings to their targets. Lookups are lock-free
// reads of an immutable map; a miss copies the map under mu. Keying by the
// endpoint string (not by *toolrouter.Tool) keeps entries valid across
// registry reloads, which build new Tool values for the same endpoints.
type targetCache struct {
	m  atomic.Pointer[map[string]*target]
	mu sync.Mutex
}

func (c *targetCache) get(endpoint string) (*target, error) {
	if m := c.m.Load(); m != nil {
		if t, ok := (*m)[endpoint]; ok {
			return t, nil
		}
	}
	t, err := newTarget(endpoint)
	if err != nil {
		return nil, err // not cached: a malformed endpoint fails every call the same way
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	if old != nil {
		if t, ok := (*old)[endpoint]; ok {
			return t, nil
		}
	}
	var m map[string]*target
	if old == nil || len(*old) >= maxTargets {
		m = make(map[string]*target, 1)
	} else {
		m = make(map[string]*target, len(*old)+1)
		for k, v := range *old {
			m[k] = v
		}
	}
	m[endpoint] = t
	c.m.Store(&m)
	return t, nil
}

// newTarget parses endpoint as http.NewRequestWithContext does, with the
// same errors.
func newTarget(endpoint string) (*target, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, err
	}
	u.Host = removeEmptyPort(u.Host)
	t := &target{tmpl: &http.Request{
		Method:     http.MethodPost,
		URL:        u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Host:       u.Host,
	}}
	if u.User != nil {
		password, _ := u.User.Password()
		t.basicAuth = "Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+password))
	}
	return t, nil
}

// request is a POST of body to the target under ctx, shaped as
// http.NewRequestWithContext shapes it for a *bytes.Reader body (the
// transport recognises the in-memory body, sends it with the headers in
// one write, and may replay it through GetBody). The caller sets Header.
func (t *target) request(ctx context.Context, body []byte) *http.Request {
	r := t.tmpl.WithContext(ctx) // a shallow copy: the URL is shared, read-only
	r.ContentLength = int64(len(body))
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	if len(body) == 0 {
		r.Body = http.NoBody
		r.GetBody = func() (io.ReadCloser, error) { return http.NoBody, nil }
	}
	return r
}

// removeEmptyPort strips the empty port in "host:" as net/http does.
func removeEmptyPort(host string) string {
	if strings.LastIndex(host, ":") > strings.LastIndex(host, "]") {
		return strings.TrimSuffix(host, ":")
	}
	return host
}
