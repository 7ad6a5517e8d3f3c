package e2e_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/poll"
)

// What a SIGHUP reload can do with a changed key, as the "reload" column
// of docs/registry.md's "Every key" table says it (reloadClass maps each
// of the column's wordings to one of these) and as the binary is observed
// to do it.
const (
	applied     = "applied to what starts next"                               // the next call, run, request or view export
	inPlace     = "applied in place (same MCP session and process)"           // an MCP server's setting
	reconnected = "the MCP server is reconnected (a new session)"             // an MCP server over HTTP
	restarted   = "the stdio MCP server's process is started again"           // a new pid
	renamed     = "the old name is gone, the new one served as new"           // tools[].name, mcp_servers[].name
	stopped     = "a removed MCP server is disconnected, its process stopped" // mcp_servers
	afresh      = "a changed rate limit counts afresh"                        // clients[].rate_limit
	newCircuit  = "changed circuit settings take a new, closed circuit"       // tools[].circuit
	notApplied  = "not applied until a restart"
)

// reloadClass maps each wording of docs/registry.md's reload column to
// what it promises. A new wording fails TestRegistryReloadColumn until it
// is added here (and a case observes it).
var reloadClass = map[string]string{
	"next call": applied,
	"next call (the environment as at start)":                             applied,
	"next call; the new definition replaces the pin (audited)":            applied,
	"next export and call; the new definition replaces the pin (audited)": applied,
	"added, changed and removed tools apply to the next call":             applied,
	"next run": applied,
	"next run (the variable's value: the environment as at start)": applied,
	"next request": applied,
	"next request (the variable's value: the environment as at start)":  applied,
	"next request: rotate keys this way":                                applied,
	"next request; a removed client gets 401":                           applied,
	"next request; a removed client gets 401 and keeps its stored data": applied,
	"views rebuilt":                            applied,
	"applied in place":                         inPlace,
	"applied in place; tools listed again":     inPlace,
	"reconnects":                               reconnected,
	"restarts the process":                     restarted,
	"the process is stopped and started again": restarted,
	"a renamed tool is a new tool":             renamed,
	"a renamed server is a new server":         renamed,
	"an added server is connected, a removed one disconnected (a stdio server stopped)":      stopped,
	"a changed rate starts its count afresh":                                                 afresh,
	"changed settings take the host's circuit with those settings (a new one starts closed)": newCircuit,
	"as `tools[].circuit`": newCircuit,
}

// reloadColumn reads docs/registry.md's "Every key" table: key → reload.
func reloadColumn(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../docs/registry.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "\n## Every key\n")
	if !ok {
		t.Fatal(`docs/registry.md has no "## Every key" section`)
	}
	table, _, _ = strings.Cut(table, "\n## ")
	col := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|.* \\| ([^|]+) \\|$").FindAllStringSubmatch(table, -1) {
		col[m[1]] = m[2]
	}
	if len(col) < 50 {
		t.Fatalf("read %d rows of the reload column; the parse is broken", len(col))
	}
	return col
}

// reloadRegistry is the state of the registry file the test edits, one
// field per key a case changes.
type reloadRegistry struct {
	tools, down1, down2, hdrURL, fixture, fixtureURL string

	added                          bool   // tools
	renName                        string // tools[].name
	descText                       string // tools[].description
	epPath                         string // tools[].endpoint
	slowTimeout                    string // tools[].timeout
	schemaRequired                 bool   // tools[].input_schema
	probeHeader                    string // tools[].headers
	approval                       string // tools[].approval
	down1Failures                  int    // tools[].circuit.failures
	down2Cooldown                  string // tools[].circuit
	redactRegex                    string // guardrails[].patterns[].regex
	rotSHA, envKeyVar, carolName   string // clients[].key_sha256, key_env, name
	goneClient, aliceAdmin         bool   // clients, clients[].admin
	narrowTools, rate              string // clients[].tools, clients[].rate_limit
	defaultProvider, p1KeyVar      string // default_provider, providers[].api_key_env
	viewDesc, discovery            string // virtual_servers[].overrides.TOOL.description, discovery
	fxName, fxPrefix, fxEnv, hxHdr string // mcp_servers[].name, prefix, env, headers
	fxExtraArg, fxPresent          bool   // mcp_servers[].command, mcp_servers
	fxMaxBytes                     int    // mcp_servers[].max_output_bytes
}

func sha(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }

func (r reloadRegistry) yaml() string {
	var b strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&b, f+"\n", a...) }
	w("discovery: %s", r.discovery)
	w("tools:")
	w("  - {name: t/echo, endpoint: %s/echo}", r.tools)
	if r.added {
		w("  - {name: t/added, endpoint: %s/echo}", r.tools)
	}
	w("  - {name: %s, endpoint: %s/echo}", r.renName, r.tools)
	w("  - {name: t/desc, description: %q, endpoint: %s/echo}", r.descText, r.tools)
	w("  - {name: t/ep, endpoint: %s%s}", r.tools, r.epPath)
	w("  - {name: t/slow, endpoint: %s/slow, timeout: %s}", r.tools, r.slowTimeout)
	if r.schemaRequired {
		w("  - {name: t/schema, endpoint: %s/echo, input_schema: {type: object, required: [must]}}", r.tools)
	} else {
		w("  - {name: t/schema, endpoint: %s/echo, input_schema: {type: object}}", r.tools)
	}
	w("  - {name: t/hdr, endpoint: %s, headers: {X-Probe: %s}}", r.hdrURL, r.probeHeader)
	w("  - {name: t/appr, endpoint: %s/echo, approval: %s}", r.tools, r.approval)
	w("  - {name: t/down1, endpoint: http://%s/x, circuit: {failures: %d, cooldown: 5m}}", r.down1, r.down1Failures)
	w("  - {name: t/down2, endpoint: http://%s/x, circuit: {failures: 1, cooldown: %s}}", r.down2, r.down2Cooldown)
	w("guardrails:")
	w("  - {name: g, builtin: redact_secrets, tools: [t/echo], patterns: [{name: probe, regex: %q}]}", r.redactRegex)
	w("clients:")
	w("  - {name: alice, key_sha256: %s, tools: [\"*\"], admin: %t, models: [\"*\"]}", sha("alice-key"), r.aliceAdmin)
	w("  - {name: rot, key_sha256: %s, tools: [\"*\"]}", r.rotSHA)
	w("  - {name: envk, key_env: %s, tools: [\"*\"]}", r.envKeyVar)
	w("  - {name: %s, key_sha256: %s, tools: [\"*\"]}", r.carolName, sha("carol-key"))
	w("  - {name: narrow, key_sha256: %s, tools: %s}", sha("narrow-key"), r.narrowTools)
	w("  - {name: rl, key_sha256: %s, tools: [\"*\"], rate_limit: %s}", sha("rl-key"), r.rate)
	if r.goneClient {
		w("  - {name: gone, key_sha256: %s, tools: [\"*\"]}", sha("gone-key"))
	}
	w("providers:")
	w("  - {name: p1, kind: openai, base_url: http://%s, model: m, api_key_env: %s}", r.down1, r.p1KeyVar)
	w("  - {name: p2, kind: openai, base_url: http://%s, model: m, api_key_env: UNSET_RELOAD_P2}", r.down1)
	w("default_provider: %s", r.defaultProvider)
	w("virtual_servers:")
	w("  - {name: v, tools: [\"t/*\"], overrides: {t/echo: {description: %q}}}", r.viewDesc)
	w("mcp_servers:")
	if r.fxPresent {
		cmd := fmt.Sprintf("[%q, -stdio]", r.fixture)
		if r.fxExtraArg {
			cmd = fmt.Sprintf("[%q, -stdio, extra]", r.fixture)
		}
		w("  - {name: %s, command: %s, env: {RELOAD_PROBE: %s}, prefix: %s, pin: false, max_output_bytes: %d}",
			r.fxName, cmd, r.fxEnv, r.fxPrefix, r.fxMaxBytes)
	}
	w("  - {name: hx, url: %s, headers: {X-Probe: %s}, pin: false}", r.fixtureURL, r.hxHdr)
	return b.String()
}

// reloadCase changes one key and observes what the reload did with it.
type reloadCase struct {
	key     string
	edit    func(*reloadRegistry)
	observe func(t *testing.T) string // one of the classes above, or a description of what it saw
}

// TestRegistryReloadColumn checks docs/registry.md's reload column against
// the binary: for a key of each of the column's wordings it changes the
// key in the file, sends SIGHUP, waits for the reload to be logged, and
// observes over the HTTP API what became of the change. It fails when a
// key's documented reload is not the observed one, and when the column
// has a wording no case observes.
func TestRegistryReloadColumn(t *testing.T) {
	t.Parallel()
	col := reloadColumn(t)
	tools := startTools(t)
	hdr := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"probe": %q}`, r.Header.Get("X-Probe"))
	}))
	defer hdr.Close()
	fix := startFixture(t)
	reg := reloadRegistry{
		tools: tools.URL(), down1: closedAddr(t), down2: closedAddr(t), hdrURL: hdr.URL,
		fixture: fixtureBin(t), fixtureURL: "http://" + fix.addr + "/mcp",
		renName: "t/ren", descText: "first", epPath: "/echo", slowTimeout: "10s", probeHeader: "one",
		approval: "none", down1Failures: 1, down2Cooldown: "5m", redactRegex: "nomatch-[0-9]+",
		rotSHA: sha("rot-key-1"), envKeyVar: "RELOAD_KEY_A", carolName: "carol", goneClient: true,
		narrowTools: `["t/echo"]`, rate: "1/h", defaultProvider: "p1", p1KeyVar: "UNSET_RELOAD_P1",
		viewDesc: "first", discovery: "full",
		fxName: "fx", fxPrefix: "fx/", fxEnv: "one", hxHdr: "one", fxPresent: true, fxMaxBytes: 100000,
	}
	rt, path := startRouter(t, reg.yaml(), "RELOAD_KEY_A=envk-key-a", "RELOAD_KEY_B=envk-key-b", "TOOLROUTER_LOG_LEVEL=info")

	as := func(key string) []string { return []string{"Authorization", "Bearer " + key} }
	alice := as("alice-key")
	calls := 0
	route := func(auth []string, tool string, args map[string]any) response {
		t.Helper()
		calls++
		return do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": fmt.Sprintf("reload-%d", calls),
			"tool_call": map[string]any{"name": tool, "arguments": args}}, auth...)
	}
	ok := func(r response) bool { return r.Status == 200 && r.JSON(t)["success"] == true }
	output := func(r response) map[string]any {
		t.Helper()
		out, _ := r.JSON(t)["output"].(map[string]any)
		return out
	}
	schemaDesc := func(query, canonical string) string {
		t.Helper()
		var body struct {
			Tools []struct {
				Name       string `json:"name"`
				Definition struct {
					Function struct {
						Description string `json:"description"`
					} `json:"function"`
				} `json:"definition"`
			} `json:"tools"`
		}
		r := do(t, "GET", rt.URL()+"/schemas/openai"+query, nil, alice...)
		if err := json.Unmarshal(r.Body, &body); r.Status != 200 || err != nil {
			t.Fatalf("GET /schemas/openai%s: %d %s", query, r.Status, r.Body)
		}
		var names []string
		for _, tl := range body.Tools {
			if tl.Name == canonical {
				return tl.Definition.Function.Description
			}
			names = append(names, tl.Name)
		}
		return fmt.Sprintf("(no %s among %v)", canonical, names)
	}
	// fxPID is the pid the stdio server answers under its prefix,
	// waiting for its tools to be listed (a new process lists them
	// moments after the reload).
	fxPID := func(prefix string) float64 {
		t.Helper()
		var pid float64
		poll.Until(t, 15*time.Second, func() error {
			r := route(alice, prefix+"pid", map[string]any{})
			if !ok(r) {
				return fmt.Errorf("%spid: %s", prefix, r.Body)
			}
			pid, _ = output(r)["pid"].(float64)
			return nil
		})
		return pid
	}
	connected := func(server string) int {
		n := 0
		for _, l := range strings.Split(rt.Output(), "\n") {
			if strings.Contains(l, `"MCP server connected"`) && strings.Contains(l, `"mcp_server":"`+server+`"`) {
				n++
			}
		}
		return n
	}
	// stdioAfter classes a change of the stdio server: a new pid is a
	// restart, the same pid with the change seen (changed) is in place.
	stdioAfter := func(prefix string, before float64, changed func() bool) string {
		t.Helper()
		after := fxPID(prefix)
		switch {
		case after != before:
			return restarted
		case changed():
			return inPlace
		}
		return notApplied
	}
	// The processes toolrouterd started, for stdio servers.
	children := func() []int { return childPIDs(t, rt.cmd.Process.Pid) }

	var pid float64    // the stdio server's, before a case's reload
	var hxSessions int // the sessions with hx, before a case's reload
	cases := []reloadCase{
		{"tools", func(r *reloadRegistry) { r.added = true }, func(t *testing.T) string {
			if ok(route(alice, "t/added", map[string]any{})) {
				return applied
			}
			return notApplied
		}},
		{"tools[].name", func(r *reloadRegistry) { r.renName = "t/ren2" }, func(t *testing.T) string {
			old, new := route(alice, "t/ren", map[string]any{}), route(alice, "t/ren2", map[string]any{})
			if ok(new) && old.JSON(t)["error_category"] == "not_found" {
				return renamed
			}
			return fmt.Sprintf("old name: %s; new name: %s", old.Body, new.Body)
		}},
		{"tools[].description", func(r *reloadRegistry) { r.descText = "second" }, func(t *testing.T) string {
			if d := schemaDesc("", "t/desc"); d != "second" {
				return "exported description " + d
			}
			return applied
		}},
		{"tools[].endpoint", func(r *reloadRegistry) { r.epPath = "/context" }, func(t *testing.T) string {
			if _, ok := output(route(alice, "t/ep", map[string]any{}))["plan_id"]; ok {
				return applied // /context answers the plan id, /echo does not
			}
			return notApplied
		}},
		{"tools[].timeout", func(r *reloadRegistry) { r.slowTimeout = "100ms" }, func(t *testing.T) string {
			if res := route(alice, "t/slow", map[string]any{"ms": 2000}).JSON(t); res["error_category"] == "timeout" {
				return applied
			} else {
				return fmt.Sprintf("a 2s call under a 100ms timeout: %v", res)
			}
		}},
		{"tools[].input_schema", func(r *reloadRegistry) { r.schemaRequired = true }, func(t *testing.T) string {
			if res := route(alice, "t/schema", map[string]any{}).JSON(t); res["error_category"] == "schema" {
				return applied
			}
			return notApplied
		}},
		{"tools[].headers", func(r *reloadRegistry) { r.probeHeader = "two" }, func(t *testing.T) string {
			if got := output(route(alice, "t/hdr", map[string]any{}))["probe"]; got != "two" {
				return fmt.Sprintf("the tool received X-Probe %v", got)
			}
			return applied
		}},
		{"tools[].approval", func(r *reloadRegistry) { r.approval = "required" }, func(t *testing.T) string {
			if r := route(alice, "t/appr", map[string]any{}); r.Status != 202 || r.JSON(t)["status"] != "awaiting_approval" {
				return fmt.Sprintf("%d %s", r.Status, r.Body)
			}
			return applied
		}},
		{"tools[].circuit.failures", func(r *reloadRegistry) {
			// Open t/down1's circuit (one failure opens it) before the change.
			route(alice, "t/down1", map[string]any{})
			if e := fmt.Sprint(route(alice, "t/down1", map[string]any{}).JSON(t)["error"]); !strings.Contains(e, "circuit open") {
				t.Fatalf("t/down1's circuit did not open: %s", e)
			}
			r.down1Failures = 2
		}, func(t *testing.T) string { return circuitAfter(t, route(alice, "t/down1", map[string]any{})) }},
		{"tools[].circuit", func(r *reloadRegistry) {
			route(alice, "t/down2", map[string]any{})
			if e := fmt.Sprint(route(alice, "t/down2", map[string]any{}).JSON(t)["error"]); !strings.Contains(e, "circuit open") {
				t.Fatalf("t/down2's circuit did not open: %s", e)
			}
			r.down2Cooldown = "6m"
		}, func(t *testing.T) string { return circuitAfter(t, route(alice, "t/down2", map[string]any{})) }},
		{"guardrails[].patterns[].regex", func(r *reloadRegistry) { r.redactRegex = "probe-[0-9]+" }, func(t *testing.T) string {
			if r := route(alice, "t/echo", map[string]any{"s": "probe-123"}); fmt.Sprint(output(r)["s"]) != "[REDACTED:probe]" {
				return "the echoed secret came back: " + string(r.Body)
			}
			return applied
		}},
		{"clients", func(r *reloadRegistry) { r.goneClient = false }, func(t *testing.T) string {
			if r := route(as("gone-key"), "t/echo", map[string]any{}); r.Status != 401 {
				return fmt.Sprintf("a removed client's call: %d %s", r.Status, r.Body)
			}
			return applied
		}},
		{"clients[].key_sha256", func(r *reloadRegistry) { r.rotSHA = sha("rot-key-2") }, func(t *testing.T) string {
			old, new := route(as("rot-key-1"), "t/echo", map[string]any{}), route(as("rot-key-2"), "t/echo", map[string]any{})
			if old.Status == 401 && ok(new) {
				return applied
			}
			return fmt.Sprintf("old key %d, new key %d", old.Status, new.Status)
		}},
		{"clients[].key_env", func(r *reloadRegistry) { r.envKeyVar = "RELOAD_KEY_B" }, func(t *testing.T) string {
			old, new := route(as("envk-key-a"), "t/echo", map[string]any{}), route(as("envk-key-b"), "t/echo", map[string]any{})
			if old.Status == 401 && ok(new) {
				return applied
			}
			return fmt.Sprintf("old variable's key %d, new variable's key %d", old.Status, new.Status)
		}},
		{"clients[].name", func(r *reloadRegistry) { r.carolName = "carol2" }, func(t *testing.T) string {
			route(as("carol-key"), "t/echo", map[string]any{})
			m := do(t, "GET", rt.URL()+"/metrics", nil)
			if strings.Contains(string(m.Body), `client="carol2"`) {
				return applied
			}
			return notApplied
		}},
		{"clients[].tools", func(r *reloadRegistry) { r.narrowTools = `["t/ep"]` }, func(t *testing.T) string {
			if ok(route(as("narrow-key"), "t/echo", map[string]any{})) || !ok(route(as("narrow-key"), "t/ep", map[string]any{})) {
				return notApplied
			}
			return applied
		}},
		{"clients[].admin", func(r *reloadRegistry) {
			if s := do(t, "GET", rt.URL()+"/audit", nil, alice...).Status; s != 403 {
				t.Fatalf("GET /audit by a client not admin: %d", s)
			}
			r.aliceAdmin = true
		}, func(t *testing.T) string {
			if s := do(t, "GET", rt.URL()+"/audit", nil, alice...).Status; s != 200 {
				return fmt.Sprintf("GET /audit by the new admin: %d", s)
			}
			return applied
		}},
		{"clients[].rate_limit", func(r *reloadRegistry) {
			// The windows are aligned to the clock: the case must not
			// straddle the end of an hour.
			poll.Until(t, 20*time.Second, func() error {
				if left := time.Until(time.Now().Truncate(time.Hour).Add(time.Hour)); left < 15*time.Second {
					return fmt.Errorf("%v to the end of the rate window", left)
				}
				return nil
			})
			if !ok(route(as("rl-key"), "t/echo", map[string]any{})) {
				t.Fatal("rl's first call refused")
			}
			if s := route(as("rl-key"), "t/echo", map[string]any{}).Status; s != 429 {
				t.Fatalf("rl's second call under 1/h: %d", s)
			}
			r.rate = "2/h"
		}, func(t *testing.T) string {
			// Two calls pass under 2/h only if the count started afresh.
			first, second := route(as("rl-key"), "t/echo", map[string]any{}), route(as("rl-key"), "t/echo", map[string]any{})
			switch {
			case ok(first) && ok(second):
				return afresh
			case ok(first):
				return applied + " (the count went on)"
			}
			return notApplied
		}},
		{"default_provider", func(r *reloadRegistry) { r.defaultProvider = "p2" }, func(t *testing.T) string {
			if r := do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "x"}, alice...); r.Status != 400 || !strings.Contains(string(r.Body), "UNSET_RELOAD_P2") {
				return fmt.Sprintf("a run with no provider: %d %s", r.Status, r.Body)
			}
			return applied
		}},
		{"providers[].api_key_env", func(r *reloadRegistry) { r.p1KeyVar = "UNSET_RELOAD_P1B" }, func(t *testing.T) string {
			if r := do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "x", "provider": "p1"}, alice...); r.Status != 400 || !strings.Contains(string(r.Body), "UNSET_RELOAD_P1B") {
				return fmt.Sprintf("a run on p1: %d %s", r.Status, r.Body)
			}
			return applied
		}},
		{"virtual_servers[].overrides.TOOL.description", func(r *reloadRegistry) { r.viewDesc = "second" }, func(t *testing.T) string {
			if d := schemaDesc("?server=v", "t/echo"); d != "second" {
				return "the view exports " + d
			}
			return applied
		}},
		{"mcp_servers[].env", func(r *reloadRegistry) { pid = fxPID("fx/"); r.fxEnv = "two" }, func(t *testing.T) string {
			return stdioAfter("fx/", pid, func() bool { return false })
		}},
		{"mcp_servers[].command", func(r *reloadRegistry) { pid = fxPID("fx/"); r.fxExtraArg = true }, func(t *testing.T) string {
			return stdioAfter("fx/", pid, func() bool { return false })
		}},
		{"mcp_servers[].max_output_bytes", func(r *reloadRegistry) {
			pid = fxPID("fx/")
			if r := route(alice, "fx/big", map[string]any{"bytes": 4000}); len(r.Body) < 4000 {
				t.Fatalf("fx/big before the budget: %s", r.Body)
			}
			r.fxMaxBytes = 256
		}, func(t *testing.T) string {
			return stdioAfter("fx/", pid, func() bool { return len(route(alice, "fx/big", map[string]any{"bytes": 4000}).Body) < 2000 })
		}},
		{"mcp_servers[].prefix", func(r *reloadRegistry) { pid = fxPID("fx/"); r.fxPrefix = "fz/" }, func(t *testing.T) string {
			return stdioAfter("fz/", pid, func() bool { return route(alice, "fx/pid", map[string]any{}).JSON(t)["error_category"] == "not_found" })
		}},
		{"mcp_servers[].headers", func(r *reloadRegistry) {
			poll.Until(t, 15*time.Second, func() error {
				if hxSessions = connected("hx"); hxSessions == 0 {
					return fmt.Errorf("hx never connected")
				}
				return nil
			})
			r.hxHdr = "two"
		}, func(t *testing.T) string {
			if err := poll.Wait(10*time.Second, func() error {
				if connected("hx") == hxSessions {
					return fmt.Errorf("no new session")
				}
				return nil
			}); err != nil {
				return "no new session with hx"
			}
			return reconnected
		}},
		{"mcp_servers[].name", func(r *reloadRegistry) { pid = fxPID("fz/"); r.fxName = "fy" }, func(t *testing.T) string {
			// The prefix stays fz/: the server's tools keep their names, served by a new process.
			if connected("fy") == 0 {
				if err := poll.Wait(10*time.Second, func() error {
					if connected("fy") == 0 {
						return fmt.Errorf("fy not connected")
					}
					return nil
				}); err != nil {
					return "no session named fy"
				}
			}
			if fxPID("fz/") == pid {
				return "the same process serves the renamed server"
			}
			return renamed
		}},
		{"mcp_servers", func(r *reloadRegistry) { pid = fxPID("fz/"); r.fxPresent = false }, func(t *testing.T) string {
			if err := poll.Wait(10*time.Second, func() error {
				if slices.Contains(children(), int(pid)) {
					return fmt.Errorf("process %v still running", pid)
				}
				return nil
			}); err != nil {
				return err.Error()
			}
			if res := route(alice, "fz/pid", map[string]any{}).JSON(t); res["error_category"] != "not_found" {
				return fmt.Sprintf("the removed server's tool: %v", res)
			}
			return stopped
		}},
		{"discovery", func(r *reloadRegistry) { r.discovery = "search" }, func(t *testing.T) string {
			if d := schemaDesc("", "search_tools"); strings.HasPrefix(d, "(no ") {
				return "plain /schemas: " + d
			}
			return applied
		}},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		doc, ok := col[c.key]
		if !ok {
			t.Errorf("%s: no row in docs/registry.md's table", c.key)
			continue
		}
		seen[doc] = true
		want, ok := reloadClass[doc]
		if !ok {
			t.Errorf("%s: docs/registry.md's reload %q is a wording reloadClass does not know", c.key, doc)
			continue
		}
		c.edit(&reg)
		rt.reload(t, path, reg.yaml())
		if strings.Contains(rt.Output(), "registry reload rejected") {
			t.Fatalf("%s: the edited file was rejected:\n%s\n%s", c.key, reg.yaml(), rt.Output())
		}
		got := c.observe(t)
		if got != want {
			t.Errorf("%s: docs/registry.md says a reload does %q (%s); the binary: %s", c.key, doc, want, got)
		}
	}
	// Every wording of the column is observed for some key.
	for key, doc := range col {
		if _, ok := reloadClass[doc]; !ok {
			t.Errorf("%s: docs/registry.md's reload %q is a wording reloadClass does not know", key, doc)
		} else if !seen[doc] {
			t.Errorf("%s: no case of TestRegistryReloadColumn observes the reload %q", key, doc)
			seen[doc] = true // once per wording
		}
	}
}

// circuitAfter classes the call after a reload that changed the settings
// of an open circuit: one that fails fast still has the open circuit; one
// that reaches for the backend (refused) has a new, closed circuit.
func circuitAfter(t *testing.T, r response) string {
	t.Helper()
	e := fmt.Sprint(r.JSON(t)["error"])
	if strings.Contains(e, "circuit open") {
		return "the open circuit stayed: " + e
	}
	return newCircuit
}
