// Package config reads toolrouterd's configuration from the environment.
package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/kelseyhightower/envconfig"
	"github.com/rs/zerolog"
	"github.com/toolrouterd/toolrouterd/internal/suggest"
)

// Config is the process configuration (CONTRACT §2), decoded by
// github.com/kelseyhightower/envconfig. Each field's `envconfig` tag holds
// its variable's whole name and Load processes it with no prefix, so the
// name envconfig looks up (its Key) and the one it falls back to (its Alt)
// are both that TOOLROUTER_* name: a bare ADDR or STORE of a pod's
// environment is never read. A field without the tag would be read under
// its bare upper-cased field name (TestEveryFieldHasItsWholeName). The
// `default` tag is the value of an unset variable (Vars reads both tags).
type Config struct {
	// Addr defaults to loopback: with no authentication configured a
	// non-loopback address is refused unless AllowUnauthenticated says so
	// (cmd/toolrouterd, docs/security.md "Who can reach it").
	Addr             string        `envconfig:"TOOLROUTER_ADDR" default:"127.0.0.1:8080"`
	Registry         string        `envconfig:"TOOLROUTER_REGISTRY"`
	Store            string        `envconfig:"TOOLROUTER_STORE" default:"sqlite://toolrouter.db"`
	APIKeys          []string      `envconfig:"TOOLROUTER_API_KEYS"`
	LogLevel         string        `envconfig:"TOOLROUTER_LOG_LEVEL" default:"info"`
	LogFormat        string        `envconfig:"TOOLROUTER_LOG_FORMAT" default:"json"`
	MaxBodyBytes     int64         `envconfig:"TOOLROUTER_MAX_BODY_BYTES" default:"4194304"`
	BatchConcurrency int           `envconfig:"TOOLROUTER_BATCH_CONCURRENCY" default:"16"`
	ShutdownTimeout  time.Duration `envconfig:"TOOLROUTER_SHUTDOWN_TIMEOUT" default:"30s"`
	// WriteTimeout bounds the writing of one non-streaming response, from
	// its first byte: a client that stops reading is cut off after it.
	WriteTimeout time.Duration `envconfig:"TOOLROUTER_WRITE_TIMEOUT" default:"30s"`
	// MaxBatchOutputBytes caps the tool output bytes one batch holds; the
	// calls beyond it fail as resource.
	MaxBatchOutputBytes int64 `envconfig:"TOOLROUTER_MAX_BATCH_OUTPUT_BYTES" default:"67108864"`
	// IdempotencyTTL is how long an answered Idempotency-Key is replayed.
	IdempotencyTTL time.Duration `envconfig:"TOOLROUTER_IDEMPOTENCY_TTL" default:"24h"`
	// AuditRetention bounds how long audit records live (docs/security.md "Audit
	// trail"); any replica deletes older ones.
	AuditRetention time.Duration `envconfig:"TOOLROUTER_AUDIT_RETENTION" default:"720h"`
	// RunHeartbeat is how often a running /runs run says it is alive; one
	// silent for three of its replica's heartbeats is marked interrupted
	// by any replica (replicas may differ in it).
	RunHeartbeat time.Duration `envconfig:"TOOLROUTER_RUN_HEARTBEAT" default:"5s"`
	// TaskHeartbeat is how often the replica running a task (docs/mcp.md
	// "Tasks") says it is alive and reads whether it was cancelled; a task
	// silent for three heartbeats failed (its replica stopped).
	TaskHeartbeat time.Duration `envconfig:"TOOLROUTER_TASK_HEARTBEAT" default:"5s"`
	// CircuitFailures and CircuitCooldown are the circuit breakers'
	// defaults (docs/operations.md "Circuit breakers"); 0 disables them.
	CircuitFailures int           `envconfig:"TOOLROUTER_CIRCUIT_FAILURES" default:"5"`
	CircuitCooldown time.Duration `envconfig:"TOOLROUTER_CIRCUIT_COOLDOWN" default:"30s"`
	// ApprovalTTL is how long a call held for an approver waits before it
	// expires as denied (docs/approvals.md "Approvals").
	ApprovalTTL time.Duration `envconfig:"TOOLROUTER_APPROVAL_TTL" default:"1h"`
	// MaxPendingApprovals caps one client's calls awaiting approval; a
	// call over it fails as resource. ApprovalRetention is how long
	// decided and expired approvals are kept (docs/approvals.md "Approvals").
	MaxPendingApprovals int           `envconfig:"TOOLROUTER_MAX_PENDING_APPROVALS" default:"1000"`
	ApprovalRetention   time.Duration `envconfig:"TOOLROUTER_APPROVAL_RETENTION" default:"168h"`
	// MaxActiveRuns bounds the runs one client executes at once (per
	// process), MaxRunBytes a run's stored document (docs/runs.md "Runs: limits,
	// cancellation and size").
	MaxActiveRuns int   `envconfig:"TOOLROUTER_MAX_ACTIVE_RUNS" default:"64"`
	MaxRunBytes   int64 `envconfig:"TOOLROUTER_MAX_RUN_BYTES" default:"8388608"`
	// ResultRetention and RunRetention are how long route results and
	// finished runs are kept (docs/operations.md "Retention").
	ResultRetention time.Duration `envconfig:"TOOLROUTER_RESULT_RETENTION" default:"168h"`
	RunRetention    time.Duration `envconfig:"TOOLROUTER_RUN_RETENTION" default:"168h"`
	// JWT bearer tokens (docs/security.md "JWT clients"): all of issuer, JWKS URL and
	// audience, or none.
	JWTIssuer       string `envconfig:"TOOLROUTER_JWT_ISSUER"`
	JWTJwksURL      string `envconfig:"TOOLROUTER_JWT_JWKS_URL"`
	JWTAudience     string `envconfig:"TOOLROUTER_JWT_AUDIENCE"`
	JWTSubjectClaim string `envconfig:"TOOLROUTER_JWT_SUBJECT_CLAIM" default:"sub"`
	// AllowedOrigins are the browser origins (scheme://host[:port], or *)
	// allowed besides the default ones, against DNS rebinding (docs/security.md
	// "Security"): on a loopback bind only loopback origins and Hosts are
	// accepted, elsewhere only same-origin requests.
	AllowedOrigins []string `envconfig:"TOOLROUTER_ALLOWED_ORIGINS"`
	// StateKey signs the requestStates /mcp relays (docs/mcp.md
	// "Elicitation through the gateway (multi round-trip requests)"): at
	// least 32 characters, the same on every replica; unset, a key is
	// generated once into the store.
	StateKey string `envconfig:"TOOLROUTER_STATE_KEY"`
	// MCPDiscovery* bound one discovery of an MCP server's tools (docs/mcp.md
	// "Discovery limits"): tools/list pages, tools and answer bytes.
	MCPDiscoveryMaxPages int   `envconfig:"TOOLROUTER_MCP_DISCOVERY_MAX_PAGES" default:"100"`
	MCPDiscoveryMaxTools int   `envconfig:"TOOLROUTER_MCP_DISCOVERY_MAX_TOOLS" default:"1000"`
	MCPDiscoveryMaxBytes int64 `envconfig:"TOOLROUTER_MCP_DISCOVERY_MAX_BYTES" default:"16777216"`
	// PinMaxPending and PinMaxPerServer bound one MCP server's pending
	// definition reviews and its pins (docs/trusting-tools.md "Definition churn").
	PinMaxPending   int `envconfig:"TOOLROUTER_PIN_MAX_PENDING" default:"100"`
	PinMaxPerServer int `envconfig:"TOOLROUTER_PIN_MAX_PER_SERVER" default:"2000"`
	// Code* bound one execute_code program of discovery: code
	// (docs/code-mode.md "Bounds"): its wall time, its own computing time
	// (tool calls excluded), its tool calls, the growth of the heap while
	// it runs, the bytes it returns, and the programs run at once per
	// replica.
	CodeTimeout        time.Duration `envconfig:"TOOLROUTER_CODE_TIMEOUT" default:"30s"`
	CodeCPU            time.Duration `envconfig:"TOOLROUTER_CODE_CPU" default:"5s"`
	CodeMaxCalls       int           `envconfig:"TOOLROUTER_CODE_MAX_CALLS" default:"50"`
	CodeMaxHeapBytes   int64         `envconfig:"TOOLROUTER_CODE_MAX_HEAP_BYTES" default:"67108864"`
	CodeMaxOutputBytes int           `envconfig:"TOOLROUTER_CODE_MAX_OUTPUT_BYTES" default:"262144"`
	CodeConcurrency    int           `envconfig:"TOOLROUTER_CODE_CONCURRENCY" default:"4"`
	// DebugAddr, when set, serves Go's profiler (net/http/pprof) on its
	// own listener, never on TOOLROUTER_ADDR (docs/configuration.md
	// "Configuration", TOOLROUTER_DEBUG_ADDR).
	DebugAddr string `envconfig:"TOOLROUTER_DEBUG_ADDR"`
	// AllowUnauthenticated lets toolrouterd listen on a non-loopback
	// address with no API keys, registry clients or JWT configured.
	AllowUnauthenticated bool `envconfig:"TOOLROUTER_ALLOW_UNAUTHENTICATED" default:"false"`
	// TokenKeys are the token vault's keys (docs/backend-auth.md "The
	// token vault"): comma-separated ID:KEY, KEY 32 bytes in base64; the
	// first seals, all open. Unset: auth mode oauth is off.
	TokenKeys string `envconfig:"TOOLROUTER_TOKEN_KEYS"`
	// PublicURL is toolrouterd's URL as users' browsers reach it, for the
	// oauth connect URLs and the callback (PublicURL/oauth/callback).
	PublicURL string `envconfig:"TOOLROUTER_PUBLIC_URL"`
}

// publicURL reports an absolute http(s) URL with a host and no query,
// user or fragment: the base of the oauth connect and callback URLs.
func publicURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil &&
		u.RawQuery == "" && u.Fragment == "" && s == strings.TrimSpace(s)
}

// JWT reports whether JWT bearer tokens are on.
func (c *Config) JWT() bool { return c.JWTIssuer != "" }

// Load reads and validates the configuration from the process
// environment. envconfig decodes the values: integers as strconv.ParseInt
// in base 0, durations as time.ParseDuration, lists split on commas (a
// blank value: an empty list). A variable that is set but empty counts as
// set (envconfig's rule): it is an error for every number and duration
// (neither parses from ""), is refused by Validate for the strings with a
// default, and means "none" for TOOLROUTER_REGISTRY and TOOLROUTER_API_KEYS.
// Every error is one line naming the variable at fault.
func Load() (Config, error) {
	var c Config
	if err := envconfig.Process("", &c); err != nil {
		var pe *envconfig.ParseError
		if !errors.As(err, &pe) {
			return c, fmt.Errorf("config: %w", err)
		}
		word := "integer"
		if pe.TypeName == reflect.TypeFor[time.Duration]().String() {
			word = "duration (e.g. 30s)"
		}
		return c, fmt.Errorf("%s: %q is not a valid %s", pe.KeyName, pe.Value, word)
	}
	return c, c.Validate()
}

// Var is a variable Load reads, from its Config field's tags.
type Var struct {
	Name    string // TOOLROUTER_…, the `envconfig` tag
	Default string // the `default` tag; "" for none
}

// Vars lists the variables Load reads, in the order of Config's fields.
func Vars() []Var {
	t := reflect.TypeFor[Config]()
	vars := make([]Var, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		vars = append(vars, Var{Name: f.Tag.Get("envconfig"), Default: f.Tag.Get("default")})
	}
	return vars
}

// MaxBodyLimit is the largest TOOLROUTER_MAX_BODY_BYTES: a body is read
// into memory whole, so a larger limit would let one request exhaust it.
const MaxBodyLimit = 1 << 30

// MaxBatchOutputLimit is the largest TOOLROUTER_MAX_BATCH_OUTPUT_BYTES
// (16 GiB): the outputs of a batch are held in memory together.
const MaxBatchOutputLimit = 16 << 30

// Validate checks every value.
func (c *Config) Validate() error {
	if err := c.validateAPIKeys(); err != nil {
		return err
	}
	if err := c.validateOrigins(); err != nil {
		return err
	}
	switch {
	case c.Addr == "":
		return errors.New("TOOLROUTER_ADDR: must not be empty (e.g. :8080 or 127.0.0.1:8080)")
	case c.Addr != strings.TrimSpace(c.Addr):
		return fmt.Errorf("TOOLROUTER_ADDR: %q has leading or trailing whitespace", c.Addr)
	case c.Registry != strings.TrimSpace(c.Registry):
		return fmt.Errorf("TOOLROUTER_REGISTRY: %q has leading or trailing whitespace", c.Registry)
	case c.Store == "":
		return errors.New("TOOLROUTER_STORE: must not be empty (memory://, sqlite://PATH or postgres://…)")
	case !validStore(c.Store):
		return fmt.Errorf("TOOLROUTER_STORE: %s is not memory://, sqlite://PATH or postgres://…", redactStore(c.Store))
	case c.MaxBodyBytes < 1024 || c.MaxBodyBytes > MaxBodyLimit:
		return fmt.Errorf("TOOLROUTER_MAX_BODY_BYTES: %d is outside 1024..%d", c.MaxBodyBytes, MaxBodyLimit)
	case c.BatchConcurrency < 1 || c.BatchConcurrency > 1024:
		return fmt.Errorf("TOOLROUTER_BATCH_CONCURRENCY: %d is outside 1..1024", c.BatchConcurrency)
	case c.ShutdownTimeout <= 0:
		return fmt.Errorf("TOOLROUTER_SHUTDOWN_TIMEOUT: %s must be positive", c.ShutdownTimeout)
	case c.WriteTimeout < time.Second || c.WriteTimeout > time.Hour:
		return fmt.Errorf("TOOLROUTER_WRITE_TIMEOUT: %s is outside 1s..1h", c.WriteTimeout)
	case c.MaxBatchOutputBytes < 1024 || c.MaxBatchOutputBytes > MaxBatchOutputLimit:
		return fmt.Errorf("TOOLROUTER_MAX_BATCH_OUTPUT_BYTES: %d is outside 1024..%d", c.MaxBatchOutputBytes, int64(MaxBatchOutputLimit))
	case c.AuditRetention <= 0:
		return fmt.Errorf("TOOLROUTER_AUDIT_RETENTION: %s must be positive", c.AuditRetention)
	case c.IdempotencyTTL <= 0:
		return fmt.Errorf("TOOLROUTER_IDEMPOTENCY_TTL: %s must be positive", c.IdempotencyTTL)
	case c.RunHeartbeat < 100*time.Millisecond:
		return fmt.Errorf("TOOLROUTER_RUN_HEARTBEAT: %s is below the minimum of 100ms", c.RunHeartbeat)
	case c.TaskHeartbeat < 100*time.Millisecond:
		return fmt.Errorf("TOOLROUTER_TASK_HEARTBEAT: %s is below the minimum of 100ms", c.TaskHeartbeat)
	case c.CodeTimeout < 100*time.Millisecond || c.CodeTimeout > 10*time.Minute:
		return fmt.Errorf("TOOLROUTER_CODE_TIMEOUT: %s is outside 100ms..10m", c.CodeTimeout)
	case c.CodeCPU < 10*time.Millisecond || c.CodeCPU > 10*time.Minute:
		return fmt.Errorf("TOOLROUTER_CODE_CPU: %s is outside 10ms..10m", c.CodeCPU)
	case c.CodeMaxCalls < 1 || c.CodeMaxCalls > 10000:
		return fmt.Errorf("TOOLROUTER_CODE_MAX_CALLS: %d is outside 1..10000", c.CodeMaxCalls)
	case c.CodeMaxHeapBytes < 1<<20 || c.CodeMaxHeapBytes > 4<<30:
		return fmt.Errorf("TOOLROUTER_CODE_MAX_HEAP_BYTES: %d is outside %d..%d", c.CodeMaxHeapBytes, 1<<20, int64(4<<30))
	case c.CodeMaxOutputBytes < 1024 || c.CodeMaxOutputBytes > 64<<20:
		return fmt.Errorf("TOOLROUTER_CODE_MAX_OUTPUT_BYTES: %d is outside 1024..%d", c.CodeMaxOutputBytes, 64<<20)
	case c.CodeConcurrency < 1 || c.CodeConcurrency > 1024:
		return fmt.Errorf("TOOLROUTER_CODE_CONCURRENCY: %d is outside 1..1024", c.CodeConcurrency)
	case c.CircuitFailures < 0 || c.CircuitFailures > 1000:
		return fmt.Errorf("TOOLROUTER_CIRCUIT_FAILURES: %d is outside 0 (off)..1000", c.CircuitFailures)
	case c.CircuitCooldown < 0 || c.CircuitCooldown > 10*time.Minute:
		return fmt.Errorf("TOOLROUTER_CIRCUIT_COOLDOWN: %s is outside 0 (off)..10m", c.CircuitCooldown)
	case c.ApprovalTTL < time.Second:
		return fmt.Errorf("TOOLROUTER_APPROVAL_TTL: %s is below the minimum of 1s", c.ApprovalTTL)
	case c.MaxPendingApprovals < 1 || c.MaxPendingApprovals > 1000000:
		return fmt.Errorf("TOOLROUTER_MAX_PENDING_APPROVALS: %d is outside 1..1000000", c.MaxPendingApprovals)
	case c.ApprovalRetention < time.Minute:
		return fmt.Errorf("TOOLROUTER_APPROVAL_RETENTION: %s is below the minimum of 1m", c.ApprovalRetention)
	case c.MaxActiveRuns < 1 || c.MaxActiveRuns > 100000:
		return fmt.Errorf("TOOLROUTER_MAX_ACTIVE_RUNS: %d is outside 1..100000", c.MaxActiveRuns)
	case c.MaxRunBytes < 64<<10 || c.MaxRunBytes > 1<<30:
		return fmt.Errorf("TOOLROUTER_MAX_RUN_BYTES: %d is outside %d..%d", c.MaxRunBytes, 64<<10, 1<<30)
	case c.ResultRetention < time.Minute:
		return fmt.Errorf("TOOLROUTER_RESULT_RETENTION: %s is below the minimum of 1m", c.ResultRetention)
	case c.RunRetention < time.Minute:
		return fmt.Errorf("TOOLROUTER_RUN_RETENTION: %s is below the minimum of 1m", c.RunRetention)
	case c.PublicURL != "" && !publicURL(c.PublicURL):
		return fmt.Errorf("TOOLROUTER_PUBLIC_URL: %q is not an http or https URL with a host and no query (e.g. https://toolrouter.example.com)", c.PublicURL)
	case c.StateKey != "" && len(c.StateKey) < 32:
		return fmt.Errorf("TOOLROUTER_STATE_KEY: %d characters; want at least 32 (or unset: a key generated into the store)", len(c.StateKey))
	case c.MCPDiscoveryMaxPages < 1 || c.MCPDiscoveryMaxPages > 100000:
		return fmt.Errorf("TOOLROUTER_MCP_DISCOVERY_MAX_PAGES: %d is outside 1..100000", c.MCPDiscoveryMaxPages)
	case c.MCPDiscoveryMaxTools < 1 || c.MCPDiscoveryMaxTools > 1000000:
		return fmt.Errorf("TOOLROUTER_MCP_DISCOVERY_MAX_TOOLS: %d is outside 1..1000000", c.MCPDiscoveryMaxTools)
	case c.MCPDiscoveryMaxBytes < 64<<10 || c.MCPDiscoveryMaxBytes > 1<<30:
		return fmt.Errorf("TOOLROUTER_MCP_DISCOVERY_MAX_BYTES: %d is outside %d..%d", c.MCPDiscoveryMaxBytes, 64<<10, 1<<30)
	case c.PinMaxPending < 1 || c.PinMaxPending > 100000:
		return fmt.Errorf("TOOLROUTER_PIN_MAX_PENDING: %d is outside 1..100000", c.PinMaxPending)
	case c.PinMaxPerServer < 1 || c.PinMaxPerServer > 1000000:
		return fmt.Errorf("TOOLROUTER_PIN_MAX_PER_SERVER: %d is outside 1..1000000", c.PinMaxPerServer)
	case c.LogFormat != "json" && c.LogFormat != "console":
		return fmt.Errorf("TOOLROUTER_LOG_FORMAT: %q is not json or console", c.LogFormat)
	}
	if err := validAddr(c.Addr); err != nil {
		return fmt.Errorf("TOOLROUTER_ADDR: %q %v", c.Addr, err)
	}
	if c.DebugAddr != "" {
		if err := validAddr(c.DebugAddr); err != nil {
			return fmt.Errorf("TOOLROUTER_DEBUG_ADDR: %q %v", c.DebugAddr, err)
		}
	}
	if err := c.validateJWT(); err != nil {
		return err
	}
	if _, err := zerolog.ParseLevel(c.LogLevel); err != nil || c.LogLevel == "" {
		return fmt.Errorf("TOOLROUTER_LOG_LEVEL: %q is not one of trace, debug, info, warn, error, fatal, panic, disabled", c.LogLevel)
	}
	return nil
}

// validateOrigins checks TOOLROUTER_ALLOWED_ORIGINS: each entry is * or an
// origin as browsers send it (http or https, a host, an optional port,
// nothing else); blanks are dropped.
func (c *Config) validateOrigins() error {
	origins := make([]string, 0, len(c.AllowedOrigins))
	for _, o := range c.AllowedOrigins {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		if o != "*" {
			u, err := url.Parse(o)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
				(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
				return fmt.Errorf("TOOLROUTER_ALLOWED_ORIGINS: %q is not an origin (scheme://host[:port]) or *", o)
			}
			o = u.Scheme + "://" + strings.ToLower(u.Host)
		}
		origins = append(origins, o)
	}
	c.AllowedOrigins = origins
	return nil
}

// validateAPIKeys drops the blanks of a comma-separated list ("k1, k2,")
// but refuses commas with no key at all: TOOLROUTER_API_KEYS=" , " (from
// "${KEY1},${KEY2}" with both unset, say) would otherwise turn
// authentication off without a word. A blank value, one blank entry, means
// none. Keys are never printed.
func (c *Config) validateAPIKeys() error {
	keys := make([]string, 0, len(c.APIKeys))
	for i, k := range c.APIKeys {
		k = strings.TrimSpace(k)
		if k == "" {
			continue
		}
		for j := 0; j < len(k); j++ {
			if k[j] < 0x21 || k[j] > 0x7e {
				return fmt.Errorf("TOOLROUTER_API_KEYS: key %d has a character that is not visible ASCII (a bearer token cannot carry it)", i+1)
			}
		}
		keys = append(keys, k)
	}
	if len(c.APIKeys) > 1 && len(keys) == 0 {
		return errors.New("TOOLROUTER_API_KEYS: holds commas but no key; set comma-separated keys, or leave it empty to turn authentication off")
	}
	c.APIKeys = keys
	return nil
}

// validateJWT checks that JWT is off, or fully configured: the issuer's
// URL, an http(s) JWKS URL and the audience tokens must name.
func (c *Config) validateJWT() error {
	if c.JWTIssuer == "" && c.JWTJwksURL == "" && c.JWTAudience == "" {
		return nil
	}
	switch {
	case c.JWTIssuer == "":
		return errors.New("TOOLROUTER_JWT_ISSUER: must be set when TOOLROUTER_JWT_JWKS_URL or TOOLROUTER_JWT_AUDIENCE is")
	case c.JWTJwksURL == "":
		return errors.New("TOOLROUTER_JWT_JWKS_URL: must be set when TOOLROUTER_JWT_ISSUER is (the issuer's signing keys)")
	case c.JWTAudience == "":
		return errors.New("TOOLROUTER_JWT_AUDIENCE: must be set when TOOLROUTER_JWT_ISSUER is (tokens must be meant for this service)")
	case c.JWTSubjectClaim == "":
		return errors.New("TOOLROUTER_JWT_SUBJECT_CLAIM: must not be empty (default sub)")
	}
	if u, err := url.Parse(c.JWTJwksURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("TOOLROUTER_JWT_JWKS_URL: %q is not an absolute http or https URL", c.JWTJwksURL)
	}
	return nil
}

// validAddr checks a listen address: host:port, the port a number in
// 0..65535 or a service name.
func validAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("is not host:port (e.g. :8080 or 127.0.0.1:8080)")
	}
	if port == "" {
		return errors.New("has no port")
	}
	if n, err := strconv.Atoi(port); err == nil {
		if n < 0 || n > 65535 {
			return fmt.Errorf("has port %d outside 0..65535", n)
		}
		return nil
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("has port %q that is neither a number nor a known service", port)
	}
	return nil
}

func validStore(s string) bool {
	switch {
	case strings.HasPrefix(s, "memory://"):
		return true
	case strings.HasPrefix(s, "sqlite://"):
		return len(s) > len("sqlite://") && strings.TrimSpace(s) == s
	case strings.HasPrefix(s, "postgres://"), strings.HasPrefix(s, "postgresql://"):
		// postgres:///db?host=/run/postgresql (a socket) has no host.
		_, err := url.Parse(s)
		return err == nil
	}
	return false
}

// redactStore quotes a store URL without its password.
func redactStore(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			return strconv.Quote(u.Redacted())
		}
	}
	if i := strings.Index(s, "@"); i >= 0 && strings.Contains(s, "://") {
		return strconv.Quote(s[:strings.Index(s, "://")+3] + "…" + s[i:])
	}
	return strconv.Quote(s)
}

// Unknown is a TOOLROUTER_* variable of the environment that nothing reads:
// most likely a misspelt setting, which would otherwise pass silently.
type Unknown struct {
	Name    string // the variable as set
	Closest string // the known name it is probably meant to be; "" for none close
}

// String is the one-line report of the variable: its name and the known
// name it is close to, never its value (it may be a secret).
func (u Unknown) String() string {
	if u.Closest == "" {
		return u.Name + ": unknown (not a toolrouterd setting)"
	}
	return u.Name + ": unknown; did you mean " + u.Closest + "?"
}

// Prefix starts the name of every setting (and of the variables the
// process reads besides, which callers pass to UnknownVars).
const Prefix = "TOOLROUTER_"

// UnknownVars lists, in environ's order, the TOOLROUTER_* variables of
// environ (os.Environ's "NAME=value" form) that are neither a setting
// (Vars) nor one of also, the names the process reads elsewhere (the
// tracing switches, the variables a registry's key_env and api_key_env
// name). Each carries the closest known name when one is close
// (suggest.Closest on the part after the prefix). A variable without the
// prefix is listed only when its whole name is close to a known one: the
// prefix itself misspelt (TOOLROUTR_ADDR, TOOL_ROUTER_ADDR).
func UnknownVars(environ []string, also ...string) []Unknown {
	known := map[string]bool{
		// Not settings of the server but the project's own names, which
		// may well be set where it runs: the quickstart clients' address
		// and key (examples/quickstart), the test suite's PostgreSQL
		// server (internal/store/pgtest) and benchmark switch (e2e).
		"TOOLROUTER_URL": true, "TOOLROUTER_KEY": true, "TOOLROUTER_TEST_POSTGRES": true, "TOOLROUTER_BENCH": true,
	}
	var rest, full []string
	for _, v := range Vars() {
		known[v.Name] = true
		rest = append(rest, strings.TrimPrefix(v.Name, Prefix))
	}
	for _, n := range also {
		known[n] = true
		if after, ok := strings.CutPrefix(n, Prefix); ok {
			rest = append(rest, after)
		}
	}
	for n := range known {
		if strings.HasPrefix(n, Prefix) {
			full = append(full, n)
		}
	}
	var out []Unknown
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		after, ok := strings.CutPrefix(name, Prefix)
		if known[name] {
			continue
		}
		if !ok {
			if c, near := suggest.Closest(name, full); near {
				out = append(out, Unknown{Name: name, Closest: c})
			}
			continue
		}
		u := Unknown{Name: name}
		if c, ok := suggest.Closest(after, rest); ok {
			u.Closest = Prefix + c
		}
		out = append(out, u)
	}
	return out
}
