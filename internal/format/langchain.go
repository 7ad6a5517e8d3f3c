package format

import "github.com/toolrouterd/toolrouterd/internal/toolrouter"

// langChain is the dialect of LangChain's ToolCall and ToolMessage.
type langChain struct{}

func (langChain) format() toolrouter.Format { return toolrouter.FormatLangChain }
func (langChain) marked() bool              { return false }

// detect: "type" "tool_call" or an "args" key.
func (langChain) detect(m map[string]any) bool {
	return has(m, "args") || m["type"] == "tool_call"
}

// normalize reads a LangChain ToolCall {"name", "args", "id", "type":
// "tool_call"}; args must be an object (or null/absent).
func (langChain) normalize(m map[string]any) (toolrouter.Call, error) {
	var c toolrouter.Call
	c.ProviderCallID, c.HasProviderCallID = callID(m, "id")
	var err error
	if c.ToolName, err = toolName(m, "name"); err != nil {
		return c, err
	}
	switch a := m["args"].(type) {
	case nil:
		c.Arguments = map[string]any{}
	case map[string]any:
		c.Arguments = a
	default:
		return c, invalid("parse error: langchain args must be a dict, got %s", kind(a))
	}
	return c, nil
}

func (langChain) result(call toolrouter.Call, success bool, _ []byte, text string) any {
	return &langChainResult[string]{Content: text, Name: call.ToolName, Status: status(success), ToolCallID: call.ProviderCallID, Type: "tool"}
}

// mediaResult: a ToolMessage whose content holds image and audio blocks.
func (langChain) mediaResult(call toolrouter.Call, blocks []block) any {
	content := convert(blocks, func(b block) (any, bool) {
		return langChainData{Base64: b.Data, MIMEType: b.MIMEType, Type: b.Type}, b.Type == "image" || b.Type == "audio"
	}, typedText("text"))
	return &langChainResult[[]any]{Content: content, Name: call.ToolName, Status: "success", ToolCallID: call.ProviderCallID, Type: "tool"}
}

func (langChain) definition(_ *toolrouter.Tool, name, desc string, schema map[string]any) map[string]any {
	return map[string]any{"name": name, "description": desc, "args_schema": schema}
}

type (
	// langChainResult's content is text, or blocks holding media.
	langChainResult[C string | []any] struct {
		Content    C      `json:"content"`
		Name       string `json:"name"`
		Status     string `json:"status"`
		ToolCallID string `json:"tool_call_id"`
		Type       string `json:"type"`
	}
	langChainData struct {
		Base64   string `json:"base64"`
		MIMEType string `json:"mime_type"`
		Type     string `json:"type"`
	}
)
