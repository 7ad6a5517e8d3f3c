package format

import (
	"strings"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// anthropic is the dialect of Anthropic's Messages API.
type anthropic struct{}

func (anthropic) format() toolrouter.Format { return toolrouter.FormatAnthropic }
func (anthropic) marked() bool              { return false }

// detect: "type" "tool_use" or an "input" key.
func (anthropic) detect(m map[string]any) bool {
	return has(m, "input") || m["type"] == "tool_use"
}

// normalize reads a Messages API tool_use block {"type": "tool_use",
// "id", "name", "input"}. The unwrapped Bedrock block, which carries
// "toolUseId" instead of "id", is accepted too.
func (anthropic) normalize(m map[string]any) (toolrouter.Call, error) {
	var c toolrouter.Call
	c.ProviderCallID, c.HasProviderCallID = callID(m, "id", "toolUseId")
	var err error
	if c.ToolName, err = toolName(m, "name"); err != nil {
		return c, err
	}
	c.Arguments, err = DecodeArgs(m["input"])
	return c, err
}

func (anthropic) result(call toolrouter.Call, success bool, _ []byte, text string) any {
	return &anthropicResult[string]{Content: text, IsError: !success, ToolUseID: call.ProviderCallID, Type: "tool_result"}
}

// anthropicImages are the image media types Anthropic takes in a
// tool_result.
var anthropicImages = []string{"image/jpeg", "image/png", "image/gif", "image/webp"}

// mediaResult: a tool_result whose content holds image blocks.
func (anthropic) mediaResult(call toolrouter.Call, blocks []block) any {
	content := convert(blocks, func(b block) (any, bool) {
		var img anthropicImage
		img.Type, img.Source.Type, img.Source.MediaType, img.Source.Data = "image", "base64", strings.ToLower(b.MIMEType), b.Data
		return img, b.image(anthropicImages...)
	}, typedText("text"))
	return &anthropicResult[[]any]{Content: content, ToolUseID: call.ProviderCallID, Type: "tool_result"}
}

// turnMessage: one user message holding every tool_result block.
func (anthropic) turnMessage(results []any) any { return userContent{Content: results, Role: "user"} }

func (anthropic) definition(_ *toolrouter.Tool, name, desc string, schema map[string]any) map[string]any {
	return map[string]any{"name": name, "description": desc, "input_schema": schema}
}

type (
	userContent struct { // Bedrock's user message has this shape too
		Content []any  `json:"content"`
		Role    string `json:"role"`
	}
	// anthropicResult's content is text, or blocks holding media.
	anthropicResult[C string | []any] struct {
		Content   C      `json:"content"`
		IsError   bool   `json:"is_error"`
		ToolUseID string `json:"tool_use_id"`
		Type      string `json:"type"`
	}
	anthropicImage struct {
		Source struct {
			Data      string `json:"data"`
			MediaType string `json:"media_type"`
			Type      string `json:"type"`
		} `json:"source"`
		Type string `json:"type"`
	}
)
