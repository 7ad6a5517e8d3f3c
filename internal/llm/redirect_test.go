package llm_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/llm"
	"github.com/toolrouterd/toolrouterd/internal/llm/anthropic"
	"github.com/toolrouterd/toolrouterd/internal/llm/bedrock"
	"github.com/toolrouterd/toolrouterd/internal/llm/gemini"
	"github.com/toolrouterd/toolrouterd/internal/llm/ollama"
	"github.com/toolrouterd/toolrouterd/internal/llm/openai"
	"github.com/toolrouterd/toolrouterd/internal/llm/responses"
)

// A redirect from a provider's base_url to another listener never brings
// the key there: provider requests do not follow redirects, whatever
// client the adapter is given (issue 32, finding 8).
func TestProviderRequestsDoNotFollowRedirects(t *testing.T) {
	const key = "sk-redirect-KEY-0001"
	const token = "session-token-redirect-0001"
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAREDIRECT00000001")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "redirect/secret/key/000000000000000000000")
	t.Setenv("AWS_SESSION_TOKEN", token)
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")

	var mu sync.Mutex
	var reached []http.Header
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reached = append(reached, r.Header.Clone())
		mu.Unlock()
		w.WriteHeader(http.StatusNotFound)
	}))
	t.Cleanup(target.Close)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status := http.StatusTemporaryRedirect // the body follows
		if strings.HasPrefix(r.URL.Path, "/found") {
			status = http.StatusFound // a GET follows, without the body (a body the SDK cannot rewind)
		}
		http.Redirect(w, r, target.URL+r.URL.RequestURI(), status)
	}))
	t.Cleanup(origin.Close)

	adapters := map[string]func(llm.Config) (llm.Adapter, error){
		"openai":           func(c llm.Config) (llm.Adapter, error) { return openai.New(c), nil },
		"anthropic":        func(c llm.Config) (llm.Adapter, error) { return anthropic.New(c), nil },
		"ollama":           func(c llm.Config) (llm.Adapter, error) { return ollama.New(c), nil },
		"openai-responses": func(c llm.Config) (llm.Adapter, error) { return responses.New(c), nil },
		"gemini":           func(c llm.Config) (llm.Adapter, error) { return gemini.New(c), nil },
		"bedrock": func(c llm.Config) (llm.Adapter, error) {
			return bedrock.New(context.Background(), c, "eu-west-1")
		},
	}
	clients := map[string]func() *http.Client{
		"own client":    func() *http.Client { return nil },
		"shared client": func() *http.Client { return &http.Client{} }, // follows redirects by default, as service's did
	}
	statuses := map[string]int{"": http.StatusTemporaryRedirect, "/found": http.StatusFound}
	for kind, mk := range adapters {
		for cname, client := range clients {
			for path, status := range statuses {
				t.Run(kind+"/"+cname+"/"+http.StatusText(status), func(t *testing.T) {
					a, err := mk(llm.Config{BaseURL: origin.URL + path, APIKey: key, HTTPClient: client(), MaxRetries: -1})
					if err != nil {
						t.Fatal(err)
					}
					_, err = a.Chat(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
					var pe *llm.ProviderError
					if !errors.As(err, &pe) || pe.Status != status || !strings.Contains(pe.Message, "do not follow redirects") {
						t.Errorf("want a refused redirect, got %v", err)
					}
					if err != nil && (strings.Contains(err.Error(), key) || strings.Contains(err.Error(), token)) {
						t.Errorf("the error carries a credential: %v", err)
					}
					mu.Lock()
					defer mu.Unlock()
					for _, h := range reached {
						t.Errorf("the redirect's target was reached, with headers %v", h)
					}
					reached = nil
				})
			}
		}
	}
}

// Credentials in a base URL (its query string, its user info) never
// appear in an error, though the transport's own errors quote the URL
// (issue 32, finding 9).
func TestSendScrubsURLCredentials(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens: connection refused
	const querySecret = "query-SECRET-0042"
	const userSecret = "userinfo-KEY-0042"
	base := "http://" + userSecret + "@" + addr + "/v1?key=" + querySecret + "&v=1"
	_, err = llm.Send(context.Background(), llm.Config{BaseURL: base, MaxRetries: -1}, "test", base+"/chat", nil, []byte(`{}`), nil)
	if err == nil {
		t.Fatal("want a connection error")
	}
	if strings.Contains(err.Error(), querySecret) || strings.Contains(err.Error(), userSecret) {
		t.Fatalf("the error carries the URL's credentials: %v", err)
	}
	if !strings.Contains(err.Error(), addr) {
		t.Fatalf("the error should still name the address: %v", err)
	}
}
