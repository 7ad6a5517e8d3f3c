package registry_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/registry"
)

func TestParseClients(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte("support-key"))
	src := head + `clients:
  - name: billing-agent
    key_env: BILLING_KEY
    tools: ["billing/*", "math/add"]
    rate_limit: 600/m
    admin: true
  - name: support-bot
    jwt_subject: support-bot
    key_sha256: ` + hex.EncodeToString(sum[:]) + `
    tools: ["kb/*"]
    approver: true
    approval: ["kb/delete"]
`
	r := parse(t, src, env("BILLING_KEY", " billing-secret "))
	cs := r.Clients()
	if len(cs) != 2 {
		t.Fatalf("clients = %+v", cs)
	}
	b, s := cs[0], cs[1]
	want := sha256.Sum256([]byte("billing-secret")) // surrounding blanks trimmed, as for TOOLROUTER_API_KEYS
	if b.Name != "billing-agent" || string(b.KeySHA256) != string(want[:]) || !b.Admin || b.Approver {
		t.Errorf("billing = %+v", b)
	}
	if b.RateLimit != (registry.Rate{N: 600, Window: time.Minute}) || b.RateLimit.String() != "600/m" {
		t.Errorf("billing rate = %+v", b.RateLimit)
	}
	if strings.Join(b.Tools, ",") != "billing/*,math/add" || b.ToolsLine != 7 {
		t.Errorf("billing tools = %v at line %d", b.Tools, b.ToolsLine)
	}
	if s.JWTSubject != "support-bot" || string(s.KeySHA256) != string(sum[:]) || !s.Approver || s.Admin ||
		!s.RateLimit.IsZero() || strings.Join(s.Approval, ",") != "kb/delete" {
		t.Errorf("support = %+v", s)
	}
	cs[0].Tools[0] = "changed"
	if r.Clients()[0].Tools[0] != "billing/*" {
		t.Error("Clients returned shared slices")
	}
}

func TestParseClientProblems(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte("k1"))
	for _, tc := range []struct {
		name, src, want string
	}{
		{"unset key_env", "  - name: a\n    key_env: NOPE\n", `r.yaml:6: client "a": key_env: environment variable NOPE is unset or empty`},
		{"key as key_env", "  - name: a\n    key_env: sk-123/abc\n", `key_env: must be the name of an environment variable`},
		{"bad hash", "  - name: a\n    key_sha256: abc\n", `r.yaml:6: client "a": key_sha256: must be the key's SHA-256 as 64 hex digits`},
		{"both", "  - name: a\n    key_env: K1\n    key_sha256: " + hex.EncodeToString(sum[:]) + "\n", `key_sha256: give key_env or key_sha256, not both`},
		{"no identity", "  - name: a\n    tools: ['*']\n", `r.yaml:5: client "a": key_env: a client needs key_env, key_sha256 or jwt_subject`},
		{"duplicate key", "  - name: a\n    key_env: K1\n  - name: b\n    key_sha256: " + hex.EncodeToString(sum[:]) + "\n", `r.yaml:8: client "b": key_sha256: the same key as client "a"; one key is one client`},
		{"duplicate name", "  - name: a\n    key_env: K1\n  - name: a\n    jwt_subject: s\n", `r.yaml:7: client "a": name: duplicate name (first at line 5)`},
		{"duplicate subject", "  - name: a\n    jwt_subject: s\n  - name: b\n    jwt_subject: s\n", `r.yaml:8: client "b": jwt_subject: duplicate jwt_subject (first at line 6)`},
		{"reserved name", "  - name: key-2\n    key_env: K1\n", `name: names key-1, key-2, … are reserved`},
		{"bad name", "  - name: 'a b'\n    key_env: K1\n", `name: must be 1-64 characters`},
		{"bad rate", "  - name: a\n    key_env: K1\n    rate_limit: 10/d\n", `r.yaml:7: client "a": rate_limit: must be N/s, N/m or N/h (e.g. 600/m), got "10/d"`},
		{"zero rate", "  - name: a\n    key_env: K1\n    rate_limit: 0/s\n", `rate_limit: must allow at least 1 call`},
		{"bad pattern", "  - name: a\n    key_env: K1\n    tools: ['billing/[a]']\n", `r.yaml:7: client "a": tools[0]: must be a tool name pattern`},
		{"unknown key", "  - name: a\n    key_env: K1\n    scopes: [x]\n", `r.yaml:7: client "a": scopes: unknown key`},
		{"admin not bool", "  - name: a\n    key_env: K1\n    admin: yes please\n", `admin: must be true or false`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := registry.Parse("r.yaml", []byte(head+"clients:\n"+tc.src), env("K1", "k1"))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(problems(t, err).Error(), tc.want) {
				t.Errorf("problems:\n%v\nwant one containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "k1") && !strings.Contains(tc.want, "k1") {
				t.Errorf("a problem shows the key: %v", err)
			}
		})
	}
}

func TestParseRate(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]registry.Rate{
		"1/s": {N: 1, Window: time.Second}, "600/m": {N: 600, Window: time.Minute}, "10000/h": {N: 10000, Window: time.Hour},
	} {
		if r, err := registry.ParseRate(in); err != nil || r != want {
			t.Errorf("ParseRate(%q) = %+v, %v", in, r, err)
		}
	}
	for _, in := range []string{"", "10", "10/", "/s", "-1/s", "1.5/s", "10/S", "10 /s", "0/m"} {
		if _, err := registry.ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q) accepted", in)
		}
	}
}

// models and model_turns (issue 32, finding 11).
func TestParseClientModels(t *testing.T) {
	t.Parallel()
	r := parse(t, head+`clients:
  - {name: a, key_env: K1, models: ["openai/gpt-4o*", "bedrock/anthropic.claude-3-5-haiku-20241022-v1:0", "*"], model_turns: 100/h}
  - {name: b, key_env: K2}
`, env("K1", "k1", "K2", "k2"))
	a, b := r.Clients()[0], r.Clients()[1]
	if strings.Join(a.Models, ",") != "openai/gpt-4o*,bedrock/anthropic.claude-3-5-haiku-20241022-v1:0,*" || a.ModelTurns != (registry.Rate{N: 100, Window: time.Hour}) {
		t.Errorf("a = %+v", a)
	}
	if b.Models != nil || !b.ModelTurns.IsZero() {
		t.Errorf("b = %+v", b)
	}
	for src, want := range map[string]string{
		"models: [gpt-4o]":       `r.yaml:5: client "a": models[0]: must be a "provider/model" pattern`,
		"models: ['openai/a b']": `models[0]: must be a "provider/model" pattern`,
		"models: '*'":            `models: must be a list`,
		"model_turns: 0/h":       `model_turns: must allow at least 1 model turn`,
		"model_turns: 5/d":       `model_turns: must be N/s, N/m or N/h`,
	} {
		_, err := registry.Parse("r.yaml", []byte(head+"clients:\n  - {name: a, key_env: K1, "+src+"}\n"), env("K1", "k1"))
		if err == nil || !strings.Contains(problems(t, err).Error(), want) {
			t.Errorf("%s: %v, want a problem containing %q", src, err, want)
		}
	}
}
