package format

import (
	"encoding/json"
	"strings"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// bedrock is the dialect of Amazon Bedrock's Converse API.
type bedrock struct{}

func (bedrock) format() toolrouter.Format { return toolrouter.FormatBedrock }
func (bedrock) marked() bool              { return true }

// detect: a "toolUse" object (a Converse content block).
func (bedrock) detect(m map[string]any) bool {
	_, ok := obj(m, "toolUse")
	return ok
}

// normalize reads a Converse content block {"toolUse": {"toolUseId",
// "name", "input"}}, or a bare ToolUseBlock when forced.
func (bedrock) normalize(m map[string]any) (toolrouter.Call, error) {
	tu, ok := obj(m, "toolUse")
	if !ok {
		tu = m
	}
	var c toolrouter.Call
	c.ProviderCallID, c.HasProviderCallID = callID(tu, "toolUseId")
	var err error
	if c.ToolName, err = toolName(tu, "name"); err != nil {
		return c, err
	}
	c.Arguments, err = DecodeArgs(tu["input"])
	return c, err
}

// result: a toolResult block whose content is an object output as json,
// anything else as text.
func (bedrock) result(call toolrouter.Call, success bool, out []byte, text string) any {
	r := &bedrockResult{}
	r.ToolResult.Status = status(success)
	r.ToolResult.ToolUseID = call.ProviderCallID
	if success && isObject(out) {
		r.ToolResult.Content = []any{bedrockJSON{JSON: json.RawMessage(out)}}
	} else {
		r.ToolResult.Content = []any{bedrockText{Text: text}}
	}
	return r
}

// bedrockImages are the image media types Converse takes in a toolResult.
var bedrockImages = []string{"image/jpeg", "image/png", "image/gif", "image/webp"}

// mediaResult: a toolResult whose content holds image blocks.
func (bedrock) mediaResult(call toolrouter.Call, blocks []block) any {
	r := &bedrockResult{}
	r.ToolResult.Status, r.ToolResult.ToolUseID = "success", call.ProviderCallID
	r.ToolResult.Content = convert(blocks, func(b block) (any, bool) {
		var img bedrockImage
		img.Image.Format = strings.TrimPrefix(strings.ToLower(b.MIMEType), "image/")
		img.Image.Source.Bytes = b.Data
		return img, b.image(bedrockImages...)
	}, func(s string) any { return bedrockText{Text: s} })
	return r
}

// turnMessage: one user message holding every toolResult block.
func (bedrock) turnMessage(results []any) any { return userContent{Content: results, Role: "user"} }

// definition: a toolSpec.
func (bedrock) definition(_ *toolrouter.Tool, name, desc string, schema map[string]any) map[string]any {
	spec := map[string]any{"name": name, "inputSchema": map[string]any{"json": schema}}
	if desc != "" { // Bedrock's ToolSpecification.description has a minimum length of 1
		spec["description"] = desc
	}
	return map[string]any{"toolSpec": spec}
}

type (
	bedrockResult struct {
		ToolResult struct {
			Content   []any  `json:"content"`
			Status    string `json:"status"`
			ToolUseID string `json:"toolUseId"`
		} `json:"toolResult"`
	}
	bedrockJSON struct {
		JSON json.RawMessage `json:"json"`
	}
	bedrockText struct {
		Text string `json:"text"`
	}
	bedrockImage struct {
		Image struct {
			Format string `json:"format"`
			Source struct {
				Bytes string `json:"bytes"`
			} `json:"source"`
		} `json:"image"`
	}
)
