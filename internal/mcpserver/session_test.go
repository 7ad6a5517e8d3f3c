package mcpserver_test

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/exampletools"
	"github.com/toolrouterd/toolrouterd/internal/mcpserver"
	"github.com/toolrouterd/toolrouterd/internal/pipeline"
	"github.com/toolrouterd/toolrouterd/internal/remote"
	"github.com/toolrouterd/toolrouterd/internal/router"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// roundRobin sends each request to the next replica and records which.
type roundRobin struct {
	replicas []string // host:port
	next     atomic.Int64
	client   string // sent as X-Test-Client with a bearer token, "" for none
	mu       sync.Mutex
	hits     map[string]int // replica → requests
}

func (rr *roundRobin) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	host := rr.replicas[int(rr.next.Add(1)-1)%len(rr.replicas)]
	r.URL.Host, r.Host = host, host
	if rr.client != "" {
		r.Header.Set("Authorization", "Bearer k")
		r.Header.Set("X-Test-Client", rr.client)
	}
	rr.mu.Lock()
	rr.hits[host]++
	rr.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// replicas starts n /mcp handlers sharing one router and store, each
// authenticating the client named by X-Test-Client.
func replicas(t *testing.T, n int) []string {
	t.Helper()
	toolSrv := httptest.NewServer(exampletools.Handler())
	t.Cleanup(toolSrv.Close)
	reg := &regs{}
	reg.cur.Store(parse(t, toolSrv.URL, registryYAML))
	exec := remote.New(remote.Options{})
	t.Cleanup(exec.CloseIdle)
	rt := router.New(router.Options{Exec: exec, Seq: memory.New(), Finish: &router.Finisher{},
		Stages: []toolrouter.Stage{pipeline.Resolve(func() pipeline.Tools { return reg.Current() }), pipeline.Validate, pipeline.CheckOutput}})
	var hosts []string
	for range n {
		h := mcpserver.New(mcpserver.Deps{Router: rt, Tools: func() mcpserver.Tools { return reg.Current() }, Logger: zerolog.New(zerolog.NewTestWriter(t))})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if name := r.Header.Get("X-Test-Client"); name != "" {
				r = r.WithContext(access.NewContext(r.Context(), &access.Client{Name: name}))
			}
			h.ServeHTTP(w, r)
		}))
		t.Cleanup(func() { h.Close(); srv.Close() })
		u, _ := url.Parse(srv.URL)
		hosts = append(hosts, u.Host)
	}
	return hosts
}

// TestSessionAcrossReplicas: a session client's requests spread round-robin
// over three replicas all succeed, and its calls share one plan.
func TestSessionAcrossReplicas(t *testing.T) {
	rr := &roundRobin{replicas: replicas(t, 3), hits: map[string]int{}}
	c := mcp.NewClient(&mcp.Implementation{Name: "lb-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: "http://lb/mcp", HTTPClient: &http.Client{Transport: rr}, DisableStandaloneSSE: true,
	}, legacy)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for i := range 6 {
		if _, err := cs.ListTools(context.Background(), nil); err != nil {
			t.Fatalf("tools/list %d: %v", i, err)
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "test/echo", Arguments: map[string]any{"msg": "hi"}})
		if err != nil || res.IsError {
			t.Fatalf("tools/call %d: %v %+v", i, err, res)
		}
		if got := res.Meta[mcpserver.MetaPlanID]; got != mcpserver.SessionPlanID(cs.ID()) {
			t.Errorf("call %d: plan %v, want %s", i, got, mcpserver.SessionPlanID(cs.ID()))
		}
		if got := res.Meta[mcpserver.MetaSequence]; got != float64(i) {
			t.Errorf("call %d: sequence %v", i, got)
		}
	}
	if len(rr.hits) != 3 {
		t.Errorf("requests reached %d replicas: %v", len(rr.hits), rr.hits)
	}
}

// TestSessionBoundToItsClient: a session id is the client's; another
// client presenting it gets 404, the owner is served by every replica.
func TestSessionBoundToItsClient(t *testing.T) {
	hosts := replicas(t, 2)
	owner := &roundRobin{replicas: hosts, hits: map[string]int{}, client: "alice"}
	c := mcp.NewClient(&mcp.Implementation{Name: "owner", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: "http://lb/mcp", HTTPClient: &http.Client{Transport: owner}, DisableStandaloneSSE: true,
	}, legacy)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if !strings.Contains(cs.ID(), ".") {
		t.Errorf("session id %q does not name its client", cs.ID())
	}
	for range 2 {
		if err := cs.Ping(context.Background(), nil); err != nil {
			t.Fatalf("owner's ping: %v", err)
		}
	}
	for _, host := range hosts {
		for _, as := range []string{"mallory", ""} {
			req, _ := http.NewRequest(http.MethodPost, "http://"+host+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", cs.ID())
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
			if as != "" {
				req.Header.Set("Authorization", "Bearer k")
				req.Header.Set("X-Test-Client", as)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("%s: alice's session used by %q: %d, want 404", host, as, resp.StatusCode)
			}
		}
	}
}

// TestSessionNotTakenByResuffixing: mallory takes alice's session id and
// puts her own name in its client part: the replica that holds the session
// answers 404 to every method, and alice's session lives on.
func TestSessionNotTakenByResuffixing(t *testing.T) {
	hosts := replicas(t, 1)
	owner := &roundRobin{replicas: hosts, hits: map[string]int{}, client: "alice"}
	c := mcp.NewClient(&mcp.Implementation{Name: "owner", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: "http://lb/mcp", HTTPClient: &http.Client{Transport: owner}, DisableStandaloneSSE: true,
	}, legacy)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	id, _, _ := strings.Cut(cs.ID(), ".")
	stolen := id + "." + base64.RawURLEncoding.EncodeToString([]byte("mallory"))
	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		}
		req, _ := http.NewRequest(method, "http://"+hosts[0]+"/mcp", body)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", stolen)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		req.Header.Set("Authorization", "Bearer k")
		req.Header.Set("X-Test-Client", "mallory")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s with alice's re-suffixed session id: %d, want 404", method, resp.StatusCode)
		}
	}
	if err := cs.Ping(context.Background(), nil); err != nil {
		t.Errorf("alice's session after the attempts: %v", err)
	}
}
