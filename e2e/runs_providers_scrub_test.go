package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRunErrorScrubsProviderCredentials: a Bedrock endpoint (or a proxy in
// front of it) that echoes the request's headers in its error does not put
// the access key id or the session token in the run's error, as answered
// nor as stored; nor does a credential in base_url's query string reach
// it (issue 32, finding 9).
func TestRunErrorScrubsProviderCredentials(t *testing.T) {
	t.Parallel()
	const accessKey = "AKIASCRUBTEST0000001"
	const token = "IQoJb3JpZ2luX2VjScrubTest/session+token=="
	const querySecret = "proxy-credential-0042"
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var dump strings.Builder
		_ = r.Header.Write(&dump)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("x-amzn-ErrorType", "ValidationException")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"message": "echo " + r.URL.String() + "?auth=" + querySecret + "\n" + dump.String()})
	}))
	t.Cleanup(echo.Close)
	tools := startTools(t)
	reg := exampleRegistry(t, tools.addr) + fmt.Sprintf(`
providers:
  - {name: echo, kind: bedrock, base_url: "%s/?auth=%s", model: m, region: us-west-2}
default_provider: echo
`, echo.URL, querySecret)
	env := append(bedrockEnv(accessKey), "AWS_SESSION_TOKEN="+token)
	rt, _ := startRouter(t, reg, env...)
	r := do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "hi"})
	run := decodeRun(t, r)
	if run.Status != "failed" || run.Error == nil || !strings.Contains(*run.Error, "ValidationException") || !strings.Contains(*run.Error, "[REDACTED]") {
		t.Fatalf("want the run failed with the endpoint's scrubbed error: %d %s", r.Status, r.Body)
	}
	stored := do(t, "GET", rt.URL()+"/runs/"+run.RunID, nil)
	for what, body := range map[string][]byte{"answered": r.Body, "stored": stored.Body} {
		for _, secret := range []string{accessKey, token, querySecret} {
			if strings.Contains(string(body), secret) {
				t.Errorf("the run as %s carries %q: %s", what, secret, body)
			}
		}
	}
}
