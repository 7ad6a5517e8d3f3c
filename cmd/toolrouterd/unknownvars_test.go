package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/registry"
)

// TestWarnUnknownVars: the warning names each TOOLROUTER_* variable nothing
// reads, with the setting it is close to, and not its value; a variable
// the registry reads (a client's key_env, a ${VAR}) or names (a
// provider's api_key_env, read only when a run asks the provider) is not
// unknown, whatever its name.
func TestWarnUnknownVars(t *testing.T) {
	env := map[string]string{"TOOLROUTER_CLIENT_KEY": "c-key", "TOOLROUTER_TOOL_HOST": "127.0.0.1:9"}
	read := &readNames{getenv: func(n string) string { return env[n] }}
	reg, err := registry.Parse("r.yaml", []byte(`tools:
  - {name: t, endpoint: "http://${TOOLROUTER_TOOL_HOST}/t"}
providers:
  - {name: p, kind: openai, model: m, api_key_env: TOOLROUTER_OPENAI_KEY}
clients:
  - {name: c, key_env: TOOLROUTER_CLIENT_KEY}
`), read.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	warnUnknownVars(zerolog.New(&buf), []string{"TOOLROUTER_CLIENT_KEY=c-key", "TOOLROUTER_TOOL_HOST=127.0.0.1:9", "TOOLROUTER_OPENAI_KEY=sk-x",
		"TOOLROUTER_STORE=memory://", "TOOLROUTER_STROE=secret-dsn", "PATH=/bin"}, read, reg)
	want := `{"level":"warn","variable":"TOOLROUTER_STROE","did_you_mean":"TOOLROUTER_STORE","message":"TOOLROUTER_STROE: unknown; did you mean TOOLROUTER_STORE?"}` + "\n"
	if got := buf.String(); got != want || strings.Contains(got, "secret") {
		t.Errorf("log:\n%s\nwant:\n%s", got, want)
	}
}
