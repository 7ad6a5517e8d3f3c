package toolrouter

import (
	"strconv"
	"time"
)

// ClientSpec is a named caller of the service as the registry file
// declares it (docs/security.md "Clients"): how it is identified (a bearer key, by
// its SHA-256, or a JWT subject), the tools it may see and call, and its
// rate limit. access builds its clients from these.
type ClientSpec struct {
	Name string
	// KeySHA256 is the SHA-256 of the client's bearer key (from key_env or
	// key_sha256); nil when the client has no key.
	KeySHA256 []byte
	// JWTSubject identifies the client by a JWT's subject claim; "" when
	// it has none.
	JWTSubject string
	// Tools are glob patterns over canonical tool names ("*" is all, "?"
	// one character); no patterns means no tools.
	Tools []string
	// RateLimit bounds the client's tool calls; the zero Rate is no limit.
	RateLimit Rate
	Admin     bool
	Approver  bool
	// Approval are glob patterns of the tools whose calls by this client
	// wait for an approver's decision (docs/approvals.md "Approvals").
	Approval []string
	// Models are glob patterns over "provider/model" (a provider of the
	// registry, the model a run asks for) the client may run in /runs;
	// no patterns means no model use (docs/security.md "Model scopes").
	Models []string
	// ModelTurns bounds the client's model requests (turns of its runs);
	// the zero Rate is no limit.
	ModelTurns Rate
	// VirtualServers, when set, are the only virtual servers through
	// which the client reaches tools (docs/mcp.md "Virtual servers and tool
	// search"); nil means the whole registry.
	VirtualServers []string
	// Credentials are the client's own secrets for the backends whose
	// auth mode is per_client, by backend name (a tool's or an MCP
	// server's), read from the environment.
	Credentials map[string]Secret
	// MayAssertUser lets a key client name the user it calls for in the
	// X-Toolrouter-User header (docs/backend-auth.md).
	MayAssertUser bool
	// SpendLimit bounds what the client may spend a day and a month
	// (docs/costs.md "Spend limits"); zero: no limit.
	SpendLimit SpendLimit
	// Line is where the client is in the registry file; ToolsLine where
	// its tools are (for the registry's warnings about them), ServersLine
	// its virtual_servers.
	Line, ToolsLine, ServersLine int
}

// Rate is N calls per window.
type Rate struct {
	N      int
	Window time.Duration
}

// IsZero reports whether the rate is no limit.
func (r Rate) IsZero() bool { return r.N == 0 }

// String renders the rate as it is written in the file: 600/m.
func (r Rate) String() string {
	if r.IsZero() {
		return ""
	}
	unit := map[time.Duration]string{time.Second: "s", time.Minute: "m", time.Hour: "h"}[r.Window]
	return strconv.Itoa(r.N) + "/" + unit
}
