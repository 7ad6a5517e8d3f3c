package mcpserver

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// fakeDirectories is a server "dyn" that reads directories, as the user
// in the context.
type fakeDirectories struct{ declared bool }

func (f fakeDirectories) DirectoryRead(server string) bool { return f.declared && server == "dyn" }

func (f fakeDirectories) ReadDirectory(ctx context.Context, server, uri, cursor string) (*DirectoryReadResult, error) {
	if uri != "skill://report" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: uri + " is not a directory"}
	}
	who := "nobody"
	if u := access.UserFromContext(ctx); u != nil {
		who = u.Subject
	}
	return &DirectoryReadResult{NextCursor: "dyn-cursor", Resources: []*mcp.Resource{
		{URI: "skill://report/SKILL.md", Name: "SKILL.md"}, {URI: "skill://report/" + who, Name: who, MIMEType: directoryMIME},
		{URI: "skill://elsewhere/x", Name: "x"}}}, nil
}

// TestDirectoryRead (SEP-2640 "Reading Directories"): a listed skill's
// directories are answered from its files in force, under the gateway's
// names, paged with one cursor; a dynamic skill's are relayed to its
// server as the caller's user; anything else, a file, a skill out of the
// client's scope or a forged cursor is -32602; directoryRead is declared
// only while every skill in force can be answered.
func TestDirectoryRead(t *testing.T) {
	listed := &toolrouter.Tool{Name: "sk/skills/git", MCPServer: "sk", MCPTool: "skills/git", Kind: toolrouter.KindSkill,
		Skill: &toolrouter.Skill{URI: "skill://git/SKILL.md", Entry: []byte(`{}`), Files: map[string]string{
			"skill://git/SKILL.md": "sha256:1", "skill://git/references/GUIDE.md": "sha256:2",
			"skill://git/references/deep/x.json": "sha256:3", "skill://git/run.py": "sha256:4"}}}
	dynamic := &toolrouter.Tool{Name: "dyn/skills/report", MCPServer: "dyn", MCPTool: "skills/report", Kind: toolrouter.KindSkill,
		Skill: &toolrouter.Skill{URI: "skill://report/SKILL.md", Entry: []byte(`{}`)}}
	tools := toolSlice{listed, dynamic}
	h := New(Deps{Tools: func() Tools { return tools }, Directories: fakeDirectories{declared: true}, Resources: fakeResources{}, PageSize: 2})
	handle := h.intercept(func(context.Context, string, mcp.Request) (mcp.Result, error) {
		return nil, errors.New("not intercepted")
	})
	read := func(c *access.Client, uri, cursor string) (*DirectoryReadResult, error) {
		req := &mcp.ServerRequest[*DirectoryReadParams]{Params: &DirectoryReadParams{URI: uri, Cursor: cursor},
			Extra: &mcp.RequestExtra{TokenInfo: &auth.TokenInfo{Extra: map[string]any{clientExtra: c, userExtra: &access.User{Subject: "alice"}}}}}
		r, err := handle(context.Background(), "resources/directory/read", req)
		if err != nil {
			return nil, err
		}
		return r.(*DirectoryReadResult), nil
	}
	walk := func(uri string) (names []string) {
		t.Helper()
		cursor := ""
		for {
			r, err := read(nil, uri, cursor)
			if err != nil {
				t.Fatalf("read %s: %v", uri, err)
			}
			for _, x := range r.Resources {
				names = append(names, x.URI+" "+x.MIMEType)
			}
			if cursor = r.NextCursor; cursor == "" {
				return names
			}
		}
	}
	// Three children over two pages of two; run.py's type is the
	// system's (none, or text/x-python).
	if got := walk("skill://sk/git"); len(got) != 3 || got[0] != "skill://sk/git/SKILL.md text/markdown" ||
		got[1] != "skill://sk/git/references inode/directory" || !strings.HasPrefix(got[2], "skill://sk/git/run.py ") {
		t.Errorf("the skill's root: %q", got)
	}
	if got, want := walk("skill://sk/git/references"), []string{"skill://sk/git/references/GUIDE.md text/markdown", "skill://sk/git/references/deep inode/directory"}; !slices.Equal(got, want) {
		t.Errorf("references: %q, want %q", got, want)
	}
	r, err := read(nil, "skill://dyn/report", "")
	if err != nil || r.NextCursor != "dyn-cursor" || len(r.Resources) != 2 || r.Resources[0].URI != "skill://dyn/report/SKILL.md" || r.Resources[1].URI != "skill://dyn/report/alice" {
		t.Errorf("the dynamic skill's root: %v %+v", err, r)
	}
	onlyDyn := access.NewClients(nil, []registry.Client{{Name: "dyn-only", Tools: []string{"dyn/*"}}}).ByName("dyn-only")
	for _, c := range []struct {
		client      *access.Client
		uri, cursor string
	}{{nil, "skill://sk/git/SKILL.md", ""}, {nil, "skill://sk/git/nope", ""}, {nil, "skill://sk/git/", ""}, {nil, "skill://sk", ""},
		{onlyDyn, "skill://sk/git", ""}, {nil, "skill://sk/git", "forged"}, {nil, "skill://dyn/report/sub", ""}} {
		_, err := read(c.client, c.uri, c.cursor)
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("read %s (cursor %q): %v, want -32602", c.uri, c.cursor, err)
		}
	}
	declared := func(h *Handler) any {
		res := &mcp.InitializeResult{Capabilities: &mcp.ServerCapabilities{}}
		h.instruct(res)
		return res.Capabilities.Extensions[skillsExtension].(map[string]any)["directoryRead"]
	}
	if got := declared(h); got != true {
		t.Errorf("directoryRead %v, want true", got)
	}
	if got := declared(New(Deps{Tools: func() Tools { return tools }, Directories: fakeDirectories{}, Resources: fakeResources{}})); got != nil {
		t.Errorf("directoryRead %v with a dynamic skill whose server reads no directories, want none", got)
	}
}

// recordingDirectories is a server "dyn" that reads every directory and
// records what it was asked.
type recordingDirectories struct{ asked *[]string }

func (recordingDirectories) DirectoryRead(server string) bool { return server == "dyn" }

func (f recordingDirectories) ReadDirectory(_ context.Context, _, uri, _ string) (*DirectoryReadResult, error) {
	*f.asked = append(*f.asked, uri)
	return &DirectoryReadResult{Resources: []*mcp.Resource{{URI: uri + "/x", Name: "x"}}}, nil
}

// TestDirectoryReadDotSegments: a directory of a dynamic skill the client
// reaches is relayed, but not a path climbing out of it with a dot
// segment (plain or percent-encoded) into another skill's, which a
// backend resolving the path would list.
func TestDirectoryReadDotSegments(t *testing.T) {
	report := &toolrouter.Tool{Name: "dyn/skills/report", MCPServer: "dyn", MCPTool: "skills/report", Kind: toolrouter.KindSkill,
		Skill: &toolrouter.Skill{URI: "skill://report/SKILL.md", Entry: []byte(`{}`)}}
	var asked []string
	h := New(Deps{Tools: func() Tools { return toolSlice{report} }, Directories: recordingDirectories{&asked}, Resources: fakeResources{}})
	handle := h.intercept(func(context.Context, string, mcp.Request) (mcp.Result, error) {
		return nil, errors.New("not intercepted")
	})
	reportOnly := access.NewClients(nil, []registry.Client{{Name: "report-only", Tools: []string{"dyn/skills/report"}}}).ByName("report-only")
	read := func(uri string) error {
		req := &mcp.ServerRequest[*DirectoryReadParams]{Params: &DirectoryReadParams{URI: uri},
			Extra: &mcp.RequestExtra{TokenInfo: &auth.TokenInfo{Extra: map[string]any{clientExtra: reportOnly, userExtra: &access.User{Subject: "alice"}}}}}
		_, err := handle(context.Background(), "resources/directory/read", req)
		return err
	}
	if err := read("skill://dyn/report/sub"); err != nil || !slices.Equal(asked, []string{"skill://report/sub"}) {
		t.Fatalf("read skill://dyn/report/sub: %v, the server was asked %q", err, asked)
	}
	asked = nil
	for _, uri := range []string{"skill://dyn/report/../payroll", "skill://dyn/report/%2e%2e/payroll", "skill://dyn/report/sub/../../payroll"} {
		if err := read(uri); err == nil {
			t.Errorf("read %s answered", uri)
		}
	}
	if len(asked) != 0 {
		t.Errorf("the server was asked %q", asked)
	}
}

// TestSkillFileReadDotSegments: a file of a dynamic skill the client
// reaches is read, but not a path climbing out of it with a dot segment
// into another skill's.
func TestSkillFileReadDotSegments(t *testing.T) {
	report := &toolrouter.Tool{Name: "dyn/skills/report", MCPServer: "dyn", MCPTool: "skills/report", Kind: toolrouter.KindSkill,
		Skill: &toolrouter.Skill{URI: "skill://report/SKILL.md", Entry: []byte(`{}`)}}
	res := fakeResources{"dyn skill://report/notes.md": "NOTES", "dyn skill://report/../payroll/SKILL.md": "SECRET",
		"dyn skill://report/%2E%2E/payroll/SKILL.md": "SECRET"}
	h := New(Deps{Tools: func() Tools { return toolSlice{report} }, Resources: res})
	handle := h.intercept(func(context.Context, string, mcp.Request) (mcp.Result, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the SDK's: unknown"}
	})
	reportOnly := access.NewClients(nil, []registry.Client{{Name: "report-only", Tools: []string{"dyn/skills/report"}}}).ByName("report-only")
	read := func(uri string) (string, error) {
		r, err := handle(context.Background(), "resources/read", &mcp.ReadResourceRequest{Params: &mcp.ReadResourceParams{URI: uri},
			Extra: &mcp.RequestExtra{TokenInfo: &auth.TokenInfo{Extra: map[string]any{clientExtra: reportOnly, userExtra: &access.User{Subject: "alice"}}}}})
		if err != nil {
			return "", err
		}
		return r.(*readResult).Contents[0].Text, nil
	}
	if got, err := read("skill://dyn/report/notes.md"); err != nil || got != "NOTES" {
		t.Fatalf("read skill://dyn/report/notes.md: %q %v", got, err)
	}
	for _, uri := range []string{"skill://dyn/report/../payroll/SKILL.md", "skill://dyn/report/%2E%2E/payroll/SKILL.md"} {
		if got, err := read(uri); err == nil {
			t.Errorf("read %s answered %q", uri, got)
		}
	}
}
