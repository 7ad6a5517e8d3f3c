package toolrouter

// Names of the meta-tools a view in search mode lists (docs/mcp.md "Virtual
// servers and tool search"); no exported tool may take them there.
const (
	SearchToolsName = "search_tools"
	CallToolName    = "call_tool"
	// ExecuteCodeName is the meta-tool of discovery: code, next to
	// search_tools (docs/code-mode.md).
	ExecuteCodeName = "execute_code"
)

// VirtualServer is a curated view over the registry as the registry file
// declares it (docs/mcp.md "Virtual servers and tool search"): the tools it
// shows, by glob over canonical names, and how each is exported. vserver
// builds its views from these.
type VirtualServer struct {
	Name      string
	Tools     []string
	Overrides []Override // in file order
	// Search is discovery: search: the view lists search_tools and
	// call_tool instead of its tools.
	Search bool
	// Code is discovery: code: the view lists search_tools and
	// execute_code, which runs a program calling its tools
	// (docs/code-mode.md).
	Code bool
	// MaxOutputBytes and MaxOutputTokens are the output budgets of the
	// view's calls; 0 is none. The registry parses and validates them;
	// the output budgets apply them (issue 23 part 4).
	MaxOutputBytes, MaxOutputTokens int
	// Instructions are returned at initialize (and server/discover) on
	// /mcp/{name}: how to use the view's tools.
	Instructions string
	// SpendLimit bounds what the calls through the view may spend
	// (docs/costs.md "Spend limits").
	SpendLimit SpendLimit
	// Line is where the server is in the registry file; ToolsLine where
	// its tools are (for `check`'s warnings).
	Line, ToolsLine int
}

// Override is how a virtual server exports one tool: "" and nil keep the
// tool's own.
type Override struct {
	Tool        string // the canonical name it is for
	Name        string
	Description string
	Title       string
	Hints       *Hints
	// Defaults are fixed argument values: removed from the exported
	// schema and filled in on every call.
	Defaults map[string]any
	// Hidden are arguments removed from the exported schema (and from
	// calls).
	Hidden []string
	Line   int
}
