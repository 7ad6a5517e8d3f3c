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
// that is not a JSON object is returned unchanged. Only the result's
// members and its blocks' are decoded (issue 32, finding 6): the values
// stay raw JSON, so the memory it takes is about the result's size.
func (s *Shaper) MCPResult(raw json.RawMessage, limit int, keep []string, where string) json.RawMessage {
	if !json.Valid(raw) {
		return raw
	}
	res := members(raw)
	if res == nil {
		return raw
	}
	if sc, ok := res["structuredContent"]; ok && len(sc) > limit {
		if c := compact(sc); len(c) > limit {
			res["structuredContent"] = (&fitter{raw: c, keep: keep, where: where}).fit(limit)
		}
	}
	content := items(res["content"])
	type payload struct {
		i     int
		block map[string]json.RawMessage
		field string // the block's field that holds its bulk ("resource.text", …)
		val   string
	}
	var ps []payload
	blocks := make([]map[string]json.RawMessage, len(content))
	resources := make([]map[string]json.RawMessage, len(content)) // a block's embedded resource
	replaced := make([]bool, len(content))                        // a binary block now a text block
	total := 0
	for i, c := range content {
		b := members(c)
		if b == nil {
			continue
		}
		blocks[i] = b
		for _, f := range []string{"text", "data"} {
			if v, ok := stringOf(b[f]); ok {
				ps = append(ps, payload{i, b, f, v})
				total += len(v)
			}
		}
		if r := members(b["resource"]); r != nil {
			resources[i] = r
			for _, f := range []string{"text", "blob"} {
				if v, ok := stringOf(r[f]); ok {
					ps = append(ps, payload{i, r, f, v})
					total += len(v)
				}
			}
		}
	}
	if total > limit {
		slices.SortStableFunc(ps, func(a, b payload) int { return len(a.val) - len(b.val) })
		avail := limit
		for j, p := range ps {
			share := avail / (len(ps) - j)
			v := p.val
			switch {
			case len(v) <= share:
			case p.field == "text":
				v = Text(v, share, where)
				p.block[p.field] = encStr(v)
			default: // base64 data or blob: useless cut
				mime, _ := stringOf(p.block["mimeType"])
				v = Text(fmt.Sprintf("[… toolrouterd cut this %s block of %s bytes; the whole output: %s …]", mime, group(len(v)), where), share, "")
				blocks[p.i] = map[string]json.RawMessage{"type": json.RawMessage(`"text"`), "text": encStr(v)}
				replaced[p.i] = true
			}
			avail -= len(v)
		}
		for i, r := range resources {
			if r != nil && !replaced[i] {
				if enc, err := json.Marshal(r); err == nil {
					blocks[i]["resource"] = enc
				}
			}
		}
		for i, b := range blocks {
			if b != nil {
				if enc, err := json.Marshal(b); err == nil {
					content[i] = enc
				}
			}
		}
		if enc, err := json.Marshal(content); err == nil {
			res["content"] = enc
		}
	}
	b, err := json.Marshal(res)
	if err != nil {
		return raw
	}
	return b
}

// stringOf decodes a JSON string value.
func stringOf(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	return unquote(raw), true
}

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// members are the members of the JSON object raw (valid JSON), their
// values slices of raw; nil when raw is not an object.
func members(raw []byte) map[string]json.RawMessage {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil
	}
	m := map[string]json.RawMessage{}
	for i = skipSpace(raw, i+1); raw[i] != '}'; {
		e := stringEnd(raw, i)
		name := unquote(raw[i:e])
		i = skipSpace(raw, skipSpace(raw, e)+1)
		e = skipValue(raw, i)
		m[name] = raw[i:e]
		if i = skipSpace(raw, e); raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return m
}

// items are the items of the JSON array raw (valid JSON), slices of raw;
// nil when raw is not an array.
func items(raw []byte) []json.RawMessage {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return nil
	}
	var out []json.RawMessage
	for i = skipSpace(raw, i+1); raw[i] != ']'; {
		e := skipValue(raw, i)
		out = append(out, raw[i:e])
		if i = skipSpace(raw, e); raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return out
}
