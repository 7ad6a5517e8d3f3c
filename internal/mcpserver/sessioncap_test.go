package mcpserver_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/mcpserver"
)

// clientEnv is newEnv behind an edge that authenticates the client named
// by X-Test-Client (none: an open service), as httpapi does.
func clientEnv(t *testing.T, opts ...func(*mcpserver.Deps)) *env {
	t.Helper()
	e := newEnv(t, opts...)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name := r.Header.Get("X-Test-Client"); name != "" {
			r = r.WithContext(access.NewContext(r.Context(), &access.Client{Name: name}))
		}
		e.h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	e.url = srv.URL
	return e
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// rawSession sends an initialize as client and returns the answer's
// status and session token ("" when refused).
func rawSession(t *testing.T, url, client string) (int, string) {
	t.Helper()
	resp := rawPost(t, url, client, "", initializeBody)
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, ""
	}
	tok := resp.Header.Get("Mcp-Session-Id")
	if r := rawPost(t, url, client, tok, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.StatusCode != http.StatusAccepted {
		t.Errorf("notifications/initialized: %d", r.StatusCode)
	}
	return resp.StatusCode, tok
}

// rawResp is an answer read whole.
type rawResp struct {
	StatusCode int
	Header     http.Header
	Body       string
}

// rawPost posts body to /mcp as client (protocol 2025-11-25), in session
// tok when not "".
func rawPost(t *testing.T, url, client, tok, body string) rawResp {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if client != "" {
		req.Header.Set("X-Test-Client", client)
		req.Header.Set("Authorization", "Bearer k")
	}
	if tok != "" {
		req.Header.Set("Mcp-Session-Id", tok)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return rawResp{resp.StatusCode, resp.Header, string(b)}
}

// TestSessionCapUnderConcurrentInitialize (issue 21 finding 1): 16
// concurrent initialize calls of one client never open more sessions than
// its cap, and every session opened answers its owner.
func TestSessionCapUnderConcurrentInitialize(t *testing.T) {
	const limit = 4
	for round := range 5 {
		e := clientEnv(t, func(d *mcpserver.Deps) { d.MaxSessions = limit })
		var mu sync.Mutex
		var toks []string
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				status, tok := rawSession(t, e.url, "alpha")
				if status != http.StatusOK && status != http.StatusServiceUnavailable {
					t.Errorf("initialize: %d", status)
				}
				if tok != "" {
					mu.Lock()
					toks = append(toks, tok)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(toks) > limit {
			t.Fatalf("round %d: %d sessions opened past a cap of %d", round, len(toks), limit)
		}
		for _, tok := range toks {
			if r := rawPost(t, e.url, "alpha", tok, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); r.StatusCode != http.StatusOK {
				t.Fatalf("round %d: an open session answers its owner %d: %s", round, r.StatusCode, r.Body)
			}
		}
	}
}

// TestSessionSurvivesAnotherClientsInitialize (issue 21 finding 1): while
// one client hammers initialize past its cap, another client's fresh
// sessions all answer their first request.
func TestSessionSurvivesAnotherClientsInitialize(t *testing.T) {
	e := clientEnv(t, func(d *mcpserver.Deps) { d.MaxSessions = 200 })
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				rawPost(t, e.url, "hammer", "", initializeBody)
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	lost := 0
	for range 150 {
		status, tok := rawSession(t, e.url, "beta")
		if status != http.StatusOK {
			t.Fatalf("beta's initialize: %d", status)
		}
		if r := rawPost(t, e.url, "beta", tok, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); r.StatusCode != http.StatusOK {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d of beta's 150 fresh sessions answered their first request with an error", lost)
	}
}
