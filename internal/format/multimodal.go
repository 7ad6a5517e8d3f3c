package format

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Multimodal results (docs/mcp.md "Images and other media in results"): a
// tool's output that holds MCP content blocks with media, either an MCP
// backend's CallToolResult or an HTTP tool's reply of the same shape
// ({"content": [{"type": "image", "data": …, "mimeType": …}, …]}), is
// answered in each provider's own blocks: Anthropic tool_result image
// blocks, Bedrock toolResult image blocks, Gemini functionResponse parts
// with inlineData, OpenAI Responses input_image items, LangChain image and
// audio content blocks, MCP content as it came. Chat Completions tool
// messages carry only text: there the media become a short marker each,
// never their base64.

// block is one MCP content block.
type block struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Data     string          `json:"data"`
	MIMEType string          `json:"mimeType"`
	URI      string          `json:"uri"`
	Resource *resourceBlock  `json:"resource"`
	raw      json.RawMessage // as it came, for MCP callers
}

type resourceBlock struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType"`
	Text     string `json:"text"`
	Blob     string `json:"blob"`
}

// mayHaveMedia reports whether the JSON object src may hold a media
// block: the string "image" or "audio" (a block's type), a key "blob" in
// any case, or a \u escape that could spell one. A text-only MCP result,
// the common one, is then not decoded again (issue 10).
func mayHaveMedia(src []byte) bool {
	return bytes.Contains(src, []byte(`\u`)) || bytes.Contains(src, []byte(`"image"`)) ||
		bytes.Contains(src, []byte(`"audio"`)) || containsFold(src, "blob")
}

// containsFold reports whether src holds word in any case (word lower
// case ASCII).
func containsFold(src []byte, word string) bool {
	for i := 0; i+len(word) <= len(src); i++ {
		if (src[i]|0x20) == word[0] && bytes.EqualFold(src[i:i+len(word)], []byte(word)) {
			return true
		}
	}
	return false
}

// mayHaveContent reports whether the JSON object src may have a key that
// encoding/json takes as "content" (in any case, or escaped), so that an
// output without one is not decoded for nothing (issue 10).
func mayHaveContent(src []byte) bool {
	if bytes.Contains(src, []byte(`\u`)) { // only \uXXXX spells a letter
		return true
	}
	for i := 0; i+len("content") <= len(src); i++ {
		j := bytes.IndexAny(src[i:], "cC")
		if j < 0 {
			return false
		}
		i += j
		if i+len("content") <= len(src) && bytes.EqualFold(src[i:i+len("content")], []byte("content")) {
			return true
		}
	}
	return false
}

// mediaBlocks returns the content blocks of an MCP result (mcpResult) or
// of an output of the same shape, when they hold media (an image, audio,
// or an embedded binary resource); nil otherwise, so results without media
// keep their usual shape.
func mediaBlocks(mcpResult, output json.RawMessage) []block {
	src := mcpResult
	if len(src) == 0 {
		src = output
	}
	if len(src) == 0 || src[0] != '{' || !mayHaveContent(src) || !mayHaveMedia(src) {
		return nil
	}
	return decodeBlocks(src)
}

// decodeBlocks is mediaBlocks without its filters.
func decodeBlocks(src []byte) []block {
	// Declared after the checks above: it escapes to the heap, which an
	// output without a content key need not pay for.
	var res struct {
		Content []json.RawMessage `json:"content"`
	}
	if json.Unmarshal(src, &res) != nil || len(res.Content) == 0 {
		return nil
	}
	blocks := make([]block, 0, len(res.Content))
	media := false
	for _, raw := range res.Content {
		var b block
		if json.Unmarshal(raw, &b) != nil {
			return nil
		}
		b.raw = raw
		switch b.Type {
		case "image", "audio":
			if b.Data == "" || b.MIMEType == "" {
				return nil
			}
			media = true
		case "resource":
			if b.Resource == nil {
				return nil
			}
			media = media || b.Resource.Blob != ""
		case "text", "resource_link":
		default:
			return nil // not MCP content
		}
		blocks = append(blocks, b)
	}
	if !media {
		return nil
	}
	return blocks
}

// decodedLen is the number of bytes base64 text s stands for.
func decodedLen(s string) int {
	s = strings.TrimRight(s, "=")
	return len(s) * 3 / 4
}

// marker is the text that stands for a block in a text-only message; ""
// for a text block.
func (b block) marker() string {
	switch b.Type {
	case "image", "audio":
		return fmt.Sprintf("[%s: %s, %d bytes]", b.Type, b.MIMEType, decodedLen(b.Data))
	case "resource":
		if b.Resource.Blob != "" {
			return fmt.Sprintf("[resource: %s, %s, %d bytes]", b.Resource.URI, b.Resource.MIMEType, decodedLen(b.Resource.Blob))
		}
	case "resource_link":
		return fmt.Sprintf("[resource link: %s]", b.URI)
	}
	return ""
}

// text is a block's text: its text, an embedded text resource's text, or
// its marker.
func (b block) text() string {
	switch {
	case b.Type == "text":
		return b.Text
	case b.Type == "resource" && b.Resource.Blob == "":
		return b.Resource.Text
	}
	return b.marker()
}

// joinedText is the blocks as one text: text-only providers' content.
func joinedText(blocks []block) string {
	parts := make([]string, 0, len(blocks))
	for _, b := range blocks {
		if t := b.text(); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n")
}

// image reports whether b is an image of one of the media types a
// provider takes.
func (b block) image(types ...string) bool {
	if b.Type != "image" {
		return false
	}
	for _, t := range types {
		if strings.EqualFold(b.MIMEType, t) {
			return true
		}
	}
	return false
}

// Image media types the providers accept in tool results.
var (
	anthropicImages = []string{"image/jpeg", "image/png", "image/gif", "image/webp"}
	bedrockImages   = anthropicImages
	geminiImages    = []string{"image/png", "image/jpeg", "image/webp"}
	openAIImages    = []string{"image/png", "image/jpeg", "image/webp", "image/gif"}
)

// The blocks of the providers. Fields are in the order of their JSON
// names, as elsewhere in this package.
type (
	textBlock struct {
		Text string `json:"text"`
		Type string `json:"type"`
	}
	anthropicImage struct {
		Source struct {
			Data      string `json:"data"`
			MediaType string `json:"media_type"`
			Type      string `json:"type"`
		} `json:"source"`
		Type string `json:"type"`
	}
	bedrockImage struct {
		Image struct {
			Format string `json:"format"`
			Source struct {
				Bytes string `json:"bytes"`
			} `json:"source"`
		} `json:"image"`
	}
	geminiPart struct {
		InlineData struct {
			Data     string `json:"data"`
			MIMEType string `json:"mimeType"`
		} `json:"inlineData"`
	}
	openAIInputImage struct {
		ImageURL string `json:"image_url"`
		Type     string `json:"type"`
	}
	langChainData struct {
		Base64   string `json:"base64"`
		MIMEType string `json:"mime_type"`
		Type     string `json:"type"`
	}
	geminiMediaResult struct {
		FunctionResponse struct {
			ID       string       `json:"id,omitempty"`
			Name     string       `json:"name"`
			Parts    []geminiPart `json:"parts"`
			Response geminiOutput `json:"response"`
		} `json:"functionResponse"`
	}
	openAIResponsesMediaResult struct {
		CallID string `json:"call_id"`
		Output []any  `json:"output"`
		Type   string `json:"type"`
	}
	anthropicMediaResult struct {
		Content   []any  `json:"content"`
		IsError   bool   `json:"is_error"`
		ToolUseID string `json:"tool_use_id"`
		Type      string `json:"type"`
	}
	langChainMediaResult struct {
		Content    []any  `json:"content"`
		Name       string `json:"name"`
		Status     string `json:"status"`
		ToolCallID string `json:"tool_call_id"`
		Type       string `json:"type"`
	}
)

// convert maps each block to a provider block: media the provider takes
// through media, everything else as text (text, or the marker) through
// text. Consecutive texts are kept apart, as the tool sent them.
func convert(blocks []block, media func(block) (any, bool), text func(string) any) []any {
	out := make([]any, 0, len(blocks))
	for _, b := range blocks {
		if m, ok := media(b); ok {
			out = append(out, m)
			continue
		}
		if t := b.text(); t != "" {
			out = append(out, text(t))
		}
	}
	return out
}

// mediaResult is the provider_result of a successful call whose output
// holds media (see mediaBlocks).
func mediaResult(call toolrouter.Call, blocks []block) any {
	id := call.ProviderCallID
	typedText := func(typ string) func(string) any {
		return func(s string) any { return textBlock{Text: s, Type: typ} }
	}
	switch call.Format {
	case toolrouter.FormatOpenAI:
		if call.Extra["openai_api"] != "responses" {
			return &openAIChatResult{Content: joinedText(blocks), Role: "tool", ToolCallID: id}
		}
		out := convert(blocks, func(b block) (any, bool) {
			return openAIInputImage{ImageURL: "data:" + b.MIMEType + ";base64," + b.Data, Type: "input_image"}, b.image(openAIImages...)
		}, typedText("input_text"))
		return &openAIResponsesMediaResult{CallID: id, Output: out, Type: "function_call_output"}

	case toolrouter.FormatAnthropic:
		content := convert(blocks, func(b block) (any, bool) {
			var img anthropicImage
			img.Type, img.Source.Type, img.Source.MediaType, img.Source.Data = "image", "base64", strings.ToLower(b.MIMEType), b.Data
			return img, b.image(anthropicImages...)
		}, typedText("text"))
		return &anthropicMediaResult{Content: content, ToolUseID: id, Type: "tool_result"}

	case toolrouter.FormatLangChain:
		content := convert(blocks, func(b block) (any, bool) {
			return langChainData{Base64: b.Data, MIMEType: b.MIMEType, Type: b.Type}, b.Type == "image" || b.Type == "audio"
		}, typedText("text"))
		return &langChainMediaResult{Content: content, Name: call.ToolName, Status: "success", ToolCallID: id, Type: "tool"}

	case toolrouter.FormatGemini:
		r := &geminiMediaResult{}
		r.FunctionResponse.ID, r.FunctionResponse.Name = id, call.ToolName
		var texts []string
		for _, b := range blocks {
			if b.image(geminiImages...) {
				var p geminiPart
				p.InlineData.Data, p.InlineData.MIMEType = b.Data, strings.ToLower(b.MIMEType)
				r.FunctionResponse.Parts = append(r.FunctionResponse.Parts, p)
			} else if t := b.text(); t != "" {
				texts = append(texts, t)
			}
		}
		r.FunctionResponse.Response = geminiOutput{Output: strings.Join(texts, "\n")}
		return r

	case toolrouter.FormatBedrock:
		r := &bedrockResult{}
		r.ToolResult.Status, r.ToolResult.ToolUseID = "success", id
		r.ToolResult.Content = convert(blocks, func(b block) (any, bool) {
			var img bedrockImage
			img.Image.Format = strings.TrimPrefix(strings.ToLower(b.MIMEType), "image/")
			img.Image.Source.Bytes = b.Data
			return img, b.image(bedrockImages...)
		}, func(s string) any { return bedrockText{Text: s} })
		return r

	case toolrouter.FormatMCP:
		r := &mcpResult{ID: call.Extra["jsonrpc_id"], JSONRPC: "2.0"}
		for _, b := range blocks {
			r.Result.Content = append(r.Result.Content, b.raw)
		}
		return r
	}
	return nil
}
