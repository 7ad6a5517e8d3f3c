package config_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/config"
	"github.com/toolrouterd/toolrouterd/internal/config/configtest"
)

// clearEnv unsets every TOOLROUTER_ variable for the test, then sets env
// (name, value, …): Load reads the process environment, so no test of this
// package runs in parallel.
func clearEnv(t *testing.T, env ...string) {
	t.Helper()
	configtest.Setenv(t, env...)
}

func TestDefaults(t *testing.T) {
	clearEnv(t)
	c, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	want := config.Config{
		Addr: "127.0.0.1:8080", Store: "sqlite://toolrouter.db", APIKeys: []string{}, LogLevel: "info", LogFormat: "json",
		MaxBodyBytes: 4194304, BatchConcurrency: 16, ShutdownTimeout: 30 * time.Second,
		IdempotencyTTL: 24 * time.Hour, RunHeartbeat: 5 * time.Second,
	}
	if c.Addr != want.Addr || c.Registry != "" || c.Store != want.Store || len(c.APIKeys) != 0 ||
		c.LogLevel != want.LogLevel || c.LogFormat != want.LogFormat || c.MaxBodyBytes != want.MaxBodyBytes ||
		c.BatchConcurrency != want.BatchConcurrency || c.ShutdownTimeout != want.ShutdownTimeout ||
		c.IdempotencyTTL != want.IdempotencyTTL || c.RunHeartbeat != want.RunHeartbeat || c.AllowUnauthenticated {
		t.Errorf("defaults %+v, want %+v", c, want)
	}
}

// TestBareNamesAreNotRead: only TOOLROUTER_-prefixed variables count (a
// Kubernetes pod or a shell easily has ADDR or STORE set). envconfig looks
// a field up under its Key, then its Alt (the `envconfig` tag); with the
// whole name in the tag and no prefix both are the TOOLROUTER_ name. With
// the tag `envconfig:"ADDR"` and the prefix TOOLROUTER, as the design card's
// first version had it, the Alt lookup would read ADDR=nonsense here.
func TestBareNamesAreNotRead(t *testing.T) {
	clearEnv(t,
		"ADDR", "nonsense", "REGISTRY", "/nonexistent.yaml", "STORE", "redis://x", "API_KEYS", "k",
		"APIKEYS", "k", "LOG_LEVEL", "loud", "LOGLEVEL", "loud", "LOG_FORMAT", "xml", "MAX_BODY_BYTES", "x",
		"BATCH_CONCURRENCY", "x", "SHUTDOWN_TIMEOUT", "x", "IDEMPOTENCY_TTL", "x", "RUN_HEARTBEAT", "x",
		// Kubernetes service links for a Service named "toolrouter".
		"TOOLROUTER_PORT", "tcp://10.0.0.1:8080", "TOOLROUTER_SERVICE_HOST", "10.0.0.1", "TOOLROUTER_PORT_8080_TCP_ADDR", "10.0.0.1")
	c, err := config.Load()
	if err != nil {
		t.Fatalf("bare names were read: %v", err)
	}
	if c.Addr != "127.0.0.1:8080" || c.Registry != "" || c.Store != "sqlite://toolrouter.db" || len(c.APIKeys) != 0 || c.LogLevel != "info" {
		t.Errorf("bare names were read: %+v", c)
	}
}

func TestValidValues(t *testing.T) {
	cases := []struct {
		name, value string
		check       func(config.Config) bool
	}{
		{"TOOLROUTER_ADDR", "127.0.0.1:0", func(c config.Config) bool { return c.Addr == "127.0.0.1:0" }},
		{"TOOLROUTER_ADDR", "[::1]:65535", func(c config.Config) bool { return c.Addr == "[::1]:65535" }},
		{"TOOLROUTER_ADDR", ":http", func(c config.Config) bool { return c.Addr == ":http" }},
		{"TOOLROUTER_ALLOW_UNAUTHENTICATED", "true", func(c config.Config) bool { return c.AllowUnauthenticated }},
		{"TOOLROUTER_REGISTRY", "", func(c config.Config) bool { return c.Registry == "" }},
		{"TOOLROUTER_REGISTRY", "examples/registry.yaml", func(c config.Config) bool { return c.Registry == "examples/registry.yaml" }},
		{"TOOLROUTER_STORE", "memory://", func(c config.Config) bool { return c.Store == "memory://" }},
		{"TOOLROUTER_STORE", "postgres://u:p@db:5432/toolrouter?sslmode=disable", func(c config.Config) bool { return strings.HasPrefix(c.Store, "postgres://") }},
		{"TOOLROUTER_STORE", "postgres:///toolrouter?host=/run/postgresql", func(c config.Config) bool { return strings.HasPrefix(c.Store, "postgres://") }},
		{"TOOLROUTER_API_KEYS", "", func(c config.Config) bool { return len(c.APIKeys) == 0 }},
		{"TOOLROUTER_API_KEYS", "   ", func(c config.Config) bool { return len(c.APIKeys) == 0 }},
		{"TOOLROUTER_API_KEYS", " k1 , k2 ,", func(c config.Config) bool { return strings.Join(c.APIKeys, "|") == "k1|k2" }},
		{"TOOLROUTER_LOG_LEVEL", "debug", func(c config.Config) bool { return c.LogLevel == "debug" }},
		{"TOOLROUTER_LOG_FORMAT", "console", func(c config.Config) bool { return c.LogFormat == "console" }},
		{"TOOLROUTER_MAX_BODY_BYTES", "1024", func(c config.Config) bool { return c.MaxBodyBytes == 1024 }},
		{"TOOLROUTER_MAX_BODY_BYTES", "1073741824", func(c config.Config) bool { return c.MaxBodyBytes == 1<<30 }},
		{"TOOLROUTER_BATCH_CONCURRENCY", "1024", func(c config.Config) bool { return c.BatchConcurrency == 1024 }},
		{"TOOLROUTER_SHUTDOWN_TIMEOUT", "1m30s", func(c config.Config) bool { return c.ShutdownTimeout == 90*time.Second }},
		{"TOOLROUTER_SHUTDOWN_TIMEOUT", "8760h", func(c config.Config) bool { return c.ShutdownTimeout == 8760*time.Hour }},
		{"TOOLROUTER_SHUTDOWN_TIMEOUT", "1.5h", func(c config.Config) bool { return c.ShutdownTimeout == 90*time.Minute }},
		{"TOOLROUTER_BATCH_CONCURRENCY", "0x10", func(c config.Config) bool { return c.BatchConcurrency == 16 }},
		{"TOOLROUTER_BATCH_CONCURRENCY", "1_000", func(c config.Config) bool { return c.BatchConcurrency == 1000 }},
		{"TOOLROUTER_API_KEYS", "k1,,k2", func(c config.Config) bool { return strings.Join(c.APIKeys, "|") == "k1|k2" }},
		{"TOOLROUTER_CIRCUIT_FAILURES", "0", func(c config.Config) bool { return c.CircuitFailures == 0 }},
	}
	for _, tc := range cases {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			clearEnv(t, tc.name, tc.value)
			c, err := config.Load()
			if err != nil {
				t.Fatalf("rejected: %v", err)
			}
			if !tc.check(c) {
				t.Errorf("got %+v", c)
			}
		})
	}
}

// TestBadValuesNameTheVariable: every bad value is an error of one line
// that starts with the variable's name, and never prints an API key.
func TestBadValuesNameTheVariable(t *testing.T) {
	cases := []struct {
		name, value, says string
	}{
		// Set but empty: an error wherever there is a default.
		{"TOOLROUTER_ADDR", "", "must not be empty"},
		{"TOOLROUTER_STORE", "", "must not be empty"},
		{"TOOLROUTER_LOG_LEVEL", "", "is not one of"},
		{"TOOLROUTER_LOG_FORMAT", "", "is not json or console"},
		{"TOOLROUTER_MAX_BODY_BYTES", "", "is not a valid integer"},
		{"TOOLROUTER_BATCH_CONCURRENCY", "", "is not a valid integer"},
		{"TOOLROUTER_SHUTDOWN_TIMEOUT", "", "is not a valid duration"},
		{"TOOLROUTER_IDEMPOTENCY_TTL", "", "is not a valid duration"},
		{"TOOLROUTER_RUN_HEARTBEAT", "", "is not a valid duration"},
		// go-envconfig decodes an empty number as 0, which turns these off.
		{"TOOLROUTER_CIRCUIT_FAILURES", "", "is not a valid integer"},
		{"TOOLROUTER_CIRCUIT_COOLDOWN", "", "is not a valid duration"},
		{"TOOLROUTER_ALLOWED_ORIGINS", "evil.example", "is not an origin"},
		{"TOOLROUTER_ALLOWED_ORIGINS", "https://app.example/path", "is not an origin"},
		{"TOOLROUTER_ALLOWED_ORIGINS", "ftp://app.example", "is not an origin"},
		{"TOOLROUTER_STATE_KEY", "short", "want at least 32"},
		{"TOOLROUTER_PUBLIC_URL", "toolrouter.example.com", "not an http or https URL"},
		{"TOOLROUTER_PUBLIC_URL", "https://tr.example/?x=1", "not an http or https URL"},
		// Whitespace.
		{"TOOLROUTER_ADDR", " :8080", "whitespace"},
		{"TOOLROUTER_ADDR", ":8080\n", "whitespace"},
		{"TOOLROUTER_REGISTRY", " ", "whitespace"},
		{"TOOLROUTER_REGISTRY", "registry.yaml ", "whitespace"},
		{"TOOLROUTER_STORE", " memory://", "is not memory://"},
		{"TOOLROUTER_STORE", "sqlite://x.db ", "is not memory://"},
		{"TOOLROUTER_LOG_LEVEL", " info", "is not one of"},
		{"TOOLROUTER_MAX_BODY_BYTES", " 4096", "is not a valid integer"},
		{"TOOLROUTER_BATCH_CONCURRENCY", "4 ", "is not a valid integer"},
		{"TOOLROUTER_SHUTDOWN_TIMEOUT", " 30s", "is not a valid duration"},
		// Addresses.
		{"TOOLROUTER_ADDR", "localhost", "is not host:port"},
		{"TOOLROUTER_ADDR", ":99999", "outside 0..65535"},
		{"TOOLROUTER_ADDR", ":-1", "outside 0..65535"},
		{"TOOLROUTER_ADDR", "127.0.0.1:", "has no port"},
		{"TOOLROUTER_ADDR", ":nosuchservice", "neither a number nor a known service"},
		{"TOOLROUTER_ADDR", "a:b:c", "is not host:port"},
		// Stores.
		{"TOOLROUTER_STORE", "redis://x", "is not memory://"},
		{"TOOLROUTER_STORE", "sqlite://", "is not memory://"},
		{"TOOLROUTER_STORE", "toolrouter.db", "is not memory://"},
		{"TOOLROUTER_STORE", "postgres://u:p@h/%zz", "is not memory://"},
		// API keys.
		{"TOOLROUTER_API_KEYS", " , ", "holds commas but no key"},
		{"TOOLROUTER_API_KEYS", ",", "holds commas but no key"},
		{"TOOLROUTER_API_KEYS", "secret1,sec ret2", "key 2 has a character"},
		{"TOOLROUTER_API_KEYS", "secret1\x7f", "key 1 has a character"},
		{"TOOLROUTER_API_KEYS", "sécret1", "key 1 has a character"},
		// Numbers and durations.
		{"TOOLROUTER_MAX_BODY_BYTES", "lots", "is not a valid integer"},
		{"TOOLROUTER_MAX_BODY_BYTES", "1023", "outside 1024.."},
		{"TOOLROUTER_MAX_BODY_BYTES", "-1", "outside 1024.."},
		{"TOOLROUTER_MAX_BODY_BYTES", "1073741825", "outside 1024.."},
		{"TOOLROUTER_MAX_BODY_BYTES", "99999999999999999999", "is not a valid integer"},
		{"TOOLROUTER_MAX_BODY_BYTES", "4e6", "is not a valid integer"},
		{"TOOLROUTER_BATCH_CONCURRENCY", "0", "outside 1..1024"},
		{"TOOLROUTER_BATCH_CONCURRENCY", "-5", "outside 1..1024"},
		{"TOOLROUTER_BATCH_CONCURRENCY", "1025", "outside 1..1024"},
		{"TOOLROUTER_BATCH_CONCURRENCY", "99999999999999999999", "is not a valid integer"},
		{"TOOLROUTER_SHUTDOWN_TIMEOUT", "soon", "is not a valid duration (e.g. 30s)"},
		{"TOOLROUTER_SHUTDOWN_TIMEOUT", "30", "is not a valid duration"},
		{"TOOLROUTER_SHUTDOWN_TIMEOUT", "-1s", "must be positive"},
		{"TOOLROUTER_SHUTDOWN_TIMEOUT", "0s", "must be positive"},
		{"TOOLROUTER_SHUTDOWN_TIMEOUT", "9999999999h", "is not a valid duration"},
		{"TOOLROUTER_IDEMPOTENCY_TTL", "-24h", "must be positive"},
		{"TOOLROUTER_RUN_HEARTBEAT", "10ms", "below the minimum"},
		{"TOOLROUTER_MAX_ACTIVE_RUNS", "0", "outside 1..100000"},
		{"TOOLROUTER_MAX_ACTIVE_RUNS", "many", "is not a valid integer"},
		{"TOOLROUTER_MAX_RUN_BYTES", "1000", "outside 65536..1073741824"},
		{"TOOLROUTER_RESULT_RETENTION", "10s", "below the minimum of 1m"},
		{"TOOLROUTER_RESULT_RETENTION", "week", "is not a valid duration"},
		{"TOOLROUTER_RUN_RETENTION", "0s", "below the minimum of 1m"},
		{"TOOLROUTER_LOG_LEVEL", "loud", "is not one of"},
		{"TOOLROUTER_LOG_FORMAT", "xml", "is not json or console"},
		{"TOOLROUTER_LOG_FORMAT", "JSON ", "is not json or console"},
	}
	for _, tc := range cases {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			clearEnv(t, tc.name, tc.value)
			_, err := config.Load()
			if err == nil {
				t.Fatalf("%s=%q accepted", tc.name, tc.value)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, tc.name+": ") || !strings.Contains(msg, tc.says) || strings.Contains(msg, "\n") {
				t.Errorf("error %q, want one line starting %q and saying %q", msg, tc.name+": ", tc.says)
			}
			if tc.name == "TOOLROUTER_API_KEYS" && strings.Contains(msg, "secret") {
				t.Errorf("error prints a key: %q", msg)
			}
		})
	}
}

// TestStorePasswordIsNotPrinted: a rejected store URL is quoted without
// its password.
func TestStorePasswordIsNotPrinted(t *testing.T) {
	for _, v := range []string{"postgres://u:hunter2@h/%zz", "mysql://u:hunter2@h/db"} {
		clearEnv(t, "TOOLROUTER_STORE", v)
		_, err := config.Load()
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: %v", v, err)
		}
	}
}

// TestSetButEmpty: a variable set to "" counts as set (envconfig's rule):
// a number or duration does not parse from it, a string with a default is
// refused by Validate, and TOOLROUTER_REGISTRY or TOOLROUTER_API_KEYS set
// empty mean none.
func TestSetButEmpty(t *testing.T) {
	clearEnv(t, "TOOLROUTER_REGISTRY", "", "TOOLROUTER_API_KEYS", "", "TOOLROUTER_ALLOWED_ORIGINS", "", "TOOLROUTER_STATE_KEY", "")
	c, err := config.Load()
	if err != nil || c.Registry != "" || len(c.APIKeys) != 0 || len(c.AllowedOrigins) != 0 || c.StateKey != "" {
		t.Fatalf("%+v %v", c, err)
	}
	for _, v := range config.Vars() {
		if v.Default == "" {
			continue
		}
		env := []string{v.Name, ""}
		if v.Name == "TOOLROUTER_JWT_SUBJECT_CLAIM" { // read only when JWT is on
			env = append(env, "TOOLROUTER_JWT_ISSUER", "i", "TOOLROUTER_JWT_JWKS_URL", "https://i/jwks", "TOOLROUTER_JWT_AUDIENCE", "a")
		}
		clearEnv(t, env...)
		if _, err := config.Load(); err == nil || !strings.HasPrefix(err.Error(), v.Name+": ") {
			t.Errorf("%s set but empty: %v, want an error naming it", v.Name, err)
		}
	}
}

// TestEveryFieldHasItsWholeName: every Config field carries an `envconfig`
// tag with a TOOLROUTER_ name, read by Load and listed by Vars; without
// one envconfig would read the field's bare name (ADDR for Addr).
func TestEveryFieldHasItsWholeName(t *testing.T) {
	ct := reflect.TypeFor[config.Config]()
	vars := config.Vars()
	if len(vars) != ct.NumField() {
		t.Fatalf("Vars lists %d variables for %d fields", len(vars), ct.NumField())
	}
	seen := map[string]bool{}
	for i := range ct.NumField() {
		f := ct.Field(i)
		name := f.Tag.Get("envconfig")
		if !strings.HasPrefix(name, "TOOLROUTER_") || name != strings.ToUpper(name) || seen[name] {
			t.Errorf("field %s: envconfig tag %q, want its own whole TOOLROUTER_ name", f.Name, name)
		}
		seen[name] = true
		if vars[i].Name != name || vars[i].Default != f.Tag.Get("default") {
			t.Errorf("Vars()[%d] = %+v, field %s has tags %s", i, vars[i], f.Name, f.Tag)
		}
	}
}

// TestEnvconfigDecodes: the values envconfig decodes from Config's tags,
// in the forms a hand-written parser easily gets wrong: durations with
// fractions and signs, integers in base 0 with underscores, lists with
// blanks (dropped by Validate).
func TestEnvconfigDecodes(t *testing.T) {
	clearEnv(t, "TOOLROUTER_SHUTDOWN_TIMEOUT", "1h0m0.5s", "TOOLROUTER_RUN_HEARTBEAT", "1.5s", "TOOLROUTER_APPROVAL_TTL", "+2h",
		"TOOLROUTER_API_KEYS", " k1 ,k2,, ", "TOOLROUTER_ALLOWED_ORIGINS", " https://a.example , http://b.example:81 ",
		"TOOLROUTER_BATCH_CONCURRENCY", "0o20", "TOOLROUTER_MAX_BODY_BYTES", "0x10_0000", "TOOLROUTER_CIRCUIT_FAILURES", "+7")
	c, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	if c.ShutdownTimeout != time.Hour+500*time.Millisecond || c.RunHeartbeat != 1500*time.Millisecond || c.ApprovalTTL != 2*time.Hour ||
		strings.Join(c.APIKeys, "|") != "k1|k2" || strings.Join(c.AllowedOrigins, "|") != "https://a.example|http://b.example:81" ||
		c.BatchConcurrency != 16 || c.MaxBodyBytes != 1<<20 || c.CircuitFailures != 7 {
		t.Errorf("%+v", c)
	}
}

func TestJWTConfig(t *testing.T) {
	clearEnv(t, "TOOLROUTER_JWT_ISSUER", "https://idp.example", "TOOLROUTER_JWT_JWKS_URL", "https://idp.example/jwks",
		"TOOLROUTER_JWT_AUDIENCE", "https://tools.example/mcp")
	c, err := config.Load()
	if err != nil || !c.JWT() || c.JWTJwksURL != "https://idp.example/jwks" || c.JWTSubjectClaim != "sub" {
		t.Fatalf("%+v %v", c, err)
	}
	for _, tc := range []struct {
		env  []string
		says string
	}{
		{[]string{"TOOLROUTER_JWT_ISSUER", "https://idp.example"}, "TOOLROUTER_JWT_JWKS_URL: must be set"},
		{[]string{"TOOLROUTER_JWT_ISSUER", "i", "TOOLROUTER_JWT_JWKS_URL", "https://x/j"}, "TOOLROUTER_JWT_AUDIENCE: must be set"},
		{[]string{"TOOLROUTER_JWT_AUDIENCE", "a"}, "TOOLROUTER_JWT_ISSUER: must be set"},
		{[]string{"TOOLROUTER_JWT_ISSUER", "i", "TOOLROUTER_JWT_JWKS_URL", "/jwks", "TOOLROUTER_JWT_AUDIENCE", "a"}, "TOOLROUTER_JWT_JWKS_URL: \"/jwks\" is not an absolute"},
	} {
		clearEnv(t, tc.env...)
		if _, err := config.Load(); err == nil || !strings.HasPrefix(err.Error(), tc.says) {
			t.Errorf("%v: %v, want %q", tc.env, err, tc.says)
		}
	}
}

func TestAllowedOrigins(t *testing.T) {
	clearEnv(t, "TOOLROUTER_ALLOWED_ORIGINS", "https://App.example:8443, *,,http://localhost:3000/")
	c, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"https://app.example:8443", "*", "http://localhost:3000"}
	if strings.Join(c.AllowedOrigins, " ") != strings.Join(want, " ") {
		t.Errorf("AllowedOrigins = %q, want %q", c.AllowedOrigins, want)
	}
}

// TestUnknownVars: a TOOLROUTER_* variable nothing reads is reported with
// the setting it is close to (none when nothing is close); settings, the
// names the caller says it reads and other variables are not; the value
// is never part of the report.
func TestUnknownVars(t *testing.T) {
	environ := []string{
		"TOOLROUTER_ADRR=0.0.0.0:9999",
		"TOOLROUTER_ADDR=127.0.0.1:8080",
		"TOOLROUTER_API_KYES=sk-secret-value",
		"TOOLROUTER_TRACE_CONTENT=true",
		"TOOLROUTER_WHATEVER_ELSE=1",
		"TOOLROUTER_OPENAI_KEY=sk-other",
		"TOOLROUTER_URL=http://127.0.0.1:8080", // the quickstart clients'
		"TOOLROUTER_KEY=k",
		"HOME=/root",
		"ADRR=x",
	}
	got := config.UnknownVars(environ, "TOOLROUTER_TRACE_CONTENT", "TOOLROUTER_OPENAI_KEY")
	want := []config.Unknown{
		{Name: "TOOLROUTER_ADRR", Closest: "TOOLROUTER_ADDR"},
		{Name: "TOOLROUTER_API_KYES", Closest: "TOOLROUTER_API_KEYS"},
		{Name: "TOOLROUTER_WHATEVER_ELSE"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("UnknownVars = %+v, want %+v", got, want)
	}
	if s := got[0].String(); s != "TOOLROUTER_ADRR: unknown; did you mean TOOLROUTER_ADDR?" {
		t.Errorf("report %q", s)
	}
	if s := got[2].String(); s != "TOOLROUTER_WHATEVER_ELSE: unknown (not a toolrouterd setting)" {
		t.Errorf("report %q", s)
	}
	for _, u := range got {
		if strings.Contains(u.String(), "sk-secret") || strings.Contains(u.String(), "9999") {
			t.Errorf("report %q holds the value", u)
		}
	}
	// A name close to one the caller reads is suggested too.
	if got := config.UnknownVars([]string{"TOOLROUTER_TRACE_CONTNET=1"}, "TOOLROUTER_TRACE_CONTENT"); len(got) != 1 || got[0].Closest != "TOOLROUTER_TRACE_CONTENT" {
		t.Errorf("config.UnknownVars(TRACE_CONTNET) = %+v", got)
	}
}

// TestUnknownVarsMisspeltPrefix (issue 38, the newcomer's walk): a
// variable whose prefix is misspelt is reported with the setting it is
// close to; other variables of the environment, and the names the
// registry reads without the prefix, are not.
func TestUnknownVarsMisspeltPrefix(t *testing.T) {
	environ := []string{"TOOLROUTR_ADDR=0.0.0.0:9999", "TOOL_ROUTER_STORE=memory://", "HOME=/root", "PATH=/bin", "ADDR=x",
		"OPENAI_API_KEY=sk-x", "TOOLROUTER_ADDR=127.0.0.1:8080"}
	got := config.UnknownVars(environ, "OPENAI_API_KEY")
	want := []config.Unknown{
		{Name: "TOOLROUTR_ADDR", Closest: "TOOLROUTER_ADDR"},
		{Name: "TOOL_ROUTER_STORE", Closest: "TOOLROUTER_STORE"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("UnknownVars = %+v, want %+v", got, want)
	}
	if s := got[0].String(); s != "TOOLROUTR_ADDR: unknown; did you mean TOOLROUTER_ADDR?" {
		t.Errorf("report %q", s)
	}
}
