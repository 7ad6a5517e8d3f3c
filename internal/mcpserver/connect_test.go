package mcpserver

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestConnectErrorIsURLElicitation: a call whose user must connect the
// backend is answered with -32042 and one URL-mode elicitation carrying
// the connect URL when the client declared URL elicitation (MCP
// 2025-11-25), and with the failed call's result otherwise.
func TestConnectErrorIsURLElicitation(t *testing.T) {
	msg := "backend gh: not connected for this user yet"
	res := &toolrouter.Result{Status: toolrouter.ResultAuthRequired, ConnectURL: "http://tr/connect/abc", Error: &msg}
	err := connectError(&mcp.CallToolRequest{}, json.RawMessage(`{"elicitation":{"url":{}}}`), res)
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != mcp.CodeURLElicitationRequired {
		t.Fatalf("err = %v", err)
	}
	var data struct {
		Elicitations []struct{ Mode, URL, Message, ElicitationID string } `json:"elicitations"`
	}
	if json.Unmarshal(rpc.Data, &data) != nil || len(data.Elicitations) != 1 || data.Elicitations[0].Mode != "url" ||
		data.Elicitations[0].URL != res.ConnectURL || data.Elicitations[0].Message != msg || data.Elicitations[0].ElicitationID == "" {
		t.Fatalf("data = %s", rpc.Data)
	}
	if err := connectError(&mcp.CallToolRequest{}, json.RawMessage(`{"elicitation":{"form":{}}}`), res); err != nil {
		t.Fatalf("a client without URL elicitation got %v", err)
	}
	out := result(res)
	if !out.IsError || len(out.Content) != 1 || out.Content[0].(*mcp.TextContent).Text != msg+": "+res.ConnectURL {
		t.Fatalf("fallback result = %+v", out)
	}
}
