package format

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Multimodal results (docs/mcp.md "Images and other media in results"): a
// tool's output that holds MCP content blocks with media, either an MCP
// backend's CallToolResult or an HTTP tool's reply of the same shape
// ({"content": [{"type": "image", "data": …, "mimeType": …}, …]}), is
// answered in each provider's own blocks: Anthropic tool_result image
// blocks, Bedrock toolResult image blocks, Gemini functionResponse parts
// with inlineData, OpenAI Responses input_image items, LangChain image and
// audio content blocks, MCP content as it came (each dialect's mediaResult).
// Chat Completions tool messages carry only text: there the media become a
// short marker each, never their base64.

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
// case ASCII, starting with a letter). Each case of its first letter is
// looked for with bytes.IndexByte (vectorised), and only there is the
// rest compared: about a tenth of the instructions of a byte-by-byte
// loop on a large output (issue 37 item 1: the filters in front of
// mediaBlocks were a tenth of a 1 MB output's route).
func containsFold(src []byte, word string) bool {
	for _, first := range [2]byte{word[0], word[0] - 'a' + 'A'} {
		for s := src; len(s) >= len(word); {
			j := bytes.IndexByte(s, first)
			if j < 0 || len(s)-j < len(word) {
				break
			}
			if bytes.EqualFold(s[j:j+len(word)], []byte(word)) {
				return true
			}
			s = s[j+1:]
		}
	}
	return false
}

// mayHaveContent reports whether the JSON object src may have a key that
// encoding/json takes as "content" (in any case, or escaped), so that an
// output without one is not decoded for nothing (issue 10).
func mayHaveContent(src []byte) bool {
	// Only \uXXXX spells a letter; "content" holds no k or s, the ASCII
	// letters encoding/json folds with non-ASCII ones.
	return bytes.Contains(src, []byte(`\u`)) || containsFold(src, "content")
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

// textBlock is a text block of Anthropic, LangChain or OpenAI Responses.
type textBlock struct {
	Text string `json:"text"`
	Type string `json:"type"`
}

// typedText makes text blocks of type typ, for convert.
func typedText(typ string) func(string) any {
	return func(s string) any { return textBlock{Text: s, Type: typ} }
}

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
