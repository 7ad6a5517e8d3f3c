package shape

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// MCPResult fits an MCP CallToolResult into limit bytes of content (the
// text, image, audio and embedded resource blocks share it, the smaller
// ones whole) and limit bytes of structuredContent (shaped as JSON output,
// with keep). A binary block that does not fit becomes a text block saying
// what was cut. Everything else of the result passes as it came; a result
// that is not a JSON object is returned unchanged.
func (s *Shaper) MCPResult(raw json.RawMessage, limit int, keep []string, where string) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var res map[string]any
	if dec.Decode(&res) != nil || res == nil {
		return raw
	}
	if sc, ok := res["structuredContent"]; ok {
		if b, err := json.Marshal(sc); err == nil && len(b) > limit {
			res["structuredContent"] = json.RawMessage((&fitter{raw: b, keep: keep, where: where}).fit(limit))
		}
	}
	content, _ := res["content"].([]any)
	type payload struct {
		i     int
		block map[string]any
		field string // the block's field that holds its bulk ("resource.text", …)
		size  int
	}
	var ps []payload
	total := 0
	for i, c := range content {
		b, _ := c.(map[string]any)
		if b == nil {
			continue
		}
		for _, f := range []string{"text", "data"} {
			if v, ok := b[f].(string); ok {
				ps = append(ps, payload{i, b, f, len(v)})
				total += len(v)
			}
		}
		if r, ok := b["resource"].(map[string]any); ok {
			for _, f := range []string{"text", "blob"} {
				if v, ok := r[f].(string); ok {
					ps = append(ps, payload{i, r, f, len(v)})
					total += len(v)
				}
			}
		}
	}
	if total > limit {
		slices.SortStableFunc(ps, func(a, b payload) int { return a.size - b.size })
		avail := limit
		for j, p := range ps {
			share := avail / (len(ps) - j)
			v := p.block[p.field].(string)
			switch {
			case len(v) <= share:
			case p.field == "text":
				v = Text(v, share, where)
				p.block[p.field] = v
			default: // base64 data or blob: useless cut
				mime, _ := p.block["mimeType"].(string)
				v = Text(fmt.Sprintf("[… toolrouterd cut this %s block of %s bytes; the whole output: %s …]", mime, group(len(v)), where), share, "")
				content[p.i] = map[string]any{"type": "text", "text": v}
			}
			avail -= len(v)
		}
	}
	b, err := json.Marshal(res)
	if err != nil {
		return raw
	}
	return b
}
