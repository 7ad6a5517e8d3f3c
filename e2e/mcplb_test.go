package e2e_test

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/mcpserver"
	"github.com/toolrouterd/toolrouterd/internal/store/pgtest"
)

// roundRobinProxy is a load balancer without sticky routing: each request
// goes to the next replica.
type roundRobinProxy struct {
	mu      sync.Mutex
	targets []*url.URL
	next    int
	hits    map[string]map[string]int // replica → HTTP method → requests
}

func newRoundRobinProxy(t *testing.T, reps []*proc) (*roundRobinProxy, string) {
	t.Helper()
	p := &roundRobinProxy{hits: map[string]map[string]int{}}
	for _, r := range reps {
		u, _ := url.Parse(r.URL())
		p.targets = append(p.targets, u)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			p.mu.Lock()
			target := p.targets[p.next%len(p.targets)]
			p.next++
			if p.hits[target.Host] == nil {
				p.hits[target.Host] = map[string]int{}
			}
			p.hits[target.Host][pr.In.Method]++
			p.mu.Unlock()
			pr.SetURL(target)
		},
		FlushInterval: -1, // server-sent events pass at once
		// A GET stream ends with the session: not worth a log line.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return p, srv.URL
}

func (p *roundRobinProxy) posts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for host, m := range p.hits {
		out[host] = m[http.MethodPost]
	}
	return out
}

// TestMCPBehindRoundRobin: three replicas on one PostgreSQL behind a
// round-robin proxy. A session client (2025-11-25: initialize, then
// Mcp-Session-Id) and a 2026-07-28 client each spread their requests over
// every replica, and every request succeeds; the session's calls share one
// plan, numbered without gaps across the replicas.
func TestMCPBehindRoundRobin(t *testing.T) {
	db := pgtest.Start(t)
	tools := startTools(t)
	reps := startReplicas(t, 3, exampleRegistry(t, tools.addr), db)
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			lb, lbURL := newRoundRobinProxy(t, reps)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c := mcp.NewClient(&mcp.Implementation{Name: "lb-e2e", Version: "1"}, nil)
			var opts *mcp.ClientSessionOptions
			if version != "2026-07-28" {
				opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
			}
			// The standalone GET stream is left on: whichever replica it
			// reaches, the session must go on working.
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: lbURL + "/mcp", MaxRetries: -1}, opts)
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer cs.Close()
			if version == "2026-07-28" && cs.ID() != "" {
				t.Errorf("2026-07-28 got session id %q", cs.ID())
			}
			if version != "2026-07-28" && cs.ID() == "" {
				t.Fatal("no session id")
			}
			for i := range 6 {
				lt, err := cs.ListTools(ctx, nil)
				if err != nil || len(lt.Tools) == 0 {
					t.Fatalf("tools/list %d: %v (%d tools)", i, err, len(lt.Tools))
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test/echo", Arguments: map[string]any{"msg": "hi"}})
				if err != nil {
					t.Fatalf("tools/call %d: %v", i, err)
				}
				if res.IsError {
					t.Fatalf("tools/call %d: %s", i, mcpText(res))
				}
				if version != "2026-07-28" {
					if want := mcpserver.SessionPlanID(cs.ID()); res.Meta["toolrouter/plan_id"] != want || res.Meta["toolrouter/sequence"] != float64(i) {
						t.Errorf("call %d: plan %v sequence %v, want %s and %d", i, res.Meta["toolrouter/plan_id"], res.Meta["toolrouter/sequence"], want, i)
					}
				}
			}
			posts := lb.posts()
			if len(posts) != 3 {
				t.Fatalf("POSTs reached %d replicas (%v), want 3", len(posts), posts)
			}
			for host, n := range posts { // 2026-07-28 clients may cache a list (ttlMs)
				if n < 2 {
					t.Errorf("replica %s got %d POSTs: %v", host, n, posts)
				}
			}
		})
	}
}
