package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/toolrouterd/toolrouterd/internal/llm/llmtest"
)

// demoTurn is -demo's model, for the offline quickstart (README,
// "Quickstart"): it reads an OpenAI Chat Completions (or Ollama /api/chat)
// conversation and answers the way a model with tools would, for one kind
// of question. A user turn holding a sum ("What is 2 + 3?") is answered
// with a call of the offered tool whose parameters are the numbers a and b
// (the example registry's math/add); the tool's answer {"sum": 5} is turned
// into the text "2 + 3 = 5". Any other tool answer is quoted, and any other
// question gets a note saying what this fake can do.
func demoTurn(req llmtest.Recorded) llmtest.Turn {
	msgs, _ := req.Body["messages"].([]any)
	if len(msgs) == 0 {
		return llmtest.Turn{Text: demoHelp}
	}
	last, _ := msgs[len(msgs)-1].(map[string]any)
	if last["role"] == "tool" {
		return llmtest.Turn{Text: demoAnswer(msgs)}
	}
	m := sumPattern.FindStringSubmatch(contentText(last["content"]))
	if m == nil {
		return llmtest.Turn{Text: demoHelp}
	}
	tool := adderTool(req.Body["tools"])
	if tool == "" {
		return llmtest.Turn{Text: "fakellm -demo: no tool with number parameters a and b was offered, so I cannot add " + m[1] + " and " + m[2] + "."}
	}
	a, _ := strconv.ParseFloat(m[1], 64)
	b, _ := strconv.ParseFloat(m[2], 64)
	return llmtest.Turn{ToolCalls: []llmtest.Call{{Name: tool, Arguments: map[string]any{"a": a, "b": b}}}}
}

const demoHelp = `fakellm -demo is an offline stand-in, not a model: it answers sums such as "What is 2 + 3?" ` +
	`by calling the offered tool that adds a and b. Point OPENAI_BASE_URL at a real provider (or Ollama) for anything else.`

var sumPattern = regexp.MustCompile(`(-?\d+(?:\.\d+)?)\s*\+\s*(-?\d+(?:\.\d+)?)`)

// adderTool is the name of the first offered function whose parameters
// have the number properties a and b.
func adderTool(tools any) string {
	list, _ := tools.([]any)
	for _, t := range list {
		var def struct {
			Function struct {
				Name       string `json:"name"`
				Parameters struct {
					Properties map[string]struct {
						Type any `json:"type"`
					} `json:"properties"`
				} `json:"parameters"`
			} `json:"function"`
		}
		if remarshal(t, &def) != nil {
			continue
		}
		p := def.Function.Parameters.Properties
		if def.Function.Name != "" && isNumber(p["a"].Type) && isNumber(p["b"].Type) {
			return def.Function.Name
		}
	}
	return ""
}

func isNumber(t any) bool { return t == "number" || t == "integer" }

// demoAnswer words the tool answers that follow the last assistant turn.
func demoAnswer(msgs []any) string {
	start := len(msgs)
	for start > 0 {
		if m, _ := msgs[start-1].(map[string]any); m["role"] == "assistant" {
			break
		}
		start--
	}
	var calls []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments any    `json:"arguments"` // a JSON string (OpenAI) or an object (Ollama)
		} `json:"function"`
	}
	if start > 0 {
		_ = remarshal(msgs[start-1].(map[string]any)["tool_calls"], &calls)
	}
	var lines []string
	for i, raw := range msgs[start:] {
		m, _ := raw.(map[string]any)
		content := contentText(m["content"])
		name, args := "the tool", map[string]any{}
		for j, c := range calls {
			if c.ID != "" && c.ID == m["tool_call_id"] || c.ID == "" && j == i {
				name = c.Function.Name
				if s, ok := c.Function.Arguments.(string); ok {
					_ = json.Unmarshal([]byte(s), &args)
				} else {
					_ = remarshal(c.Function.Arguments, &args)
				}
			}
		}
		var out map[string]any
		_ = json.Unmarshal([]byte(content), &out)
		a, aok := args["a"].(float64)
		b, bok := args["b"].(float64)
		sum, sok := out["sum"].(float64)
		if aok && bok && sok {
			lines = append(lines, fmt.Sprintf("%s + %s = %s", num(a), num(b), num(sum)))
		} else {
			lines = append(lines, fmt.Sprintf("%s answered: %s", name, content))
		}
	}
	return strings.Join(lines, "\n")
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// contentText is a message's text: a string, or the text parts of a list.
func contentText(c any) string {
	switch c := c.(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, p := range c {
			if m, ok := p.(map[string]any); ok {
				if s, ok := m["text"].(string); ok {
					parts = append(parts, s)
				}
			}
		}
		return strings.Join(parts, "")
	}
	return ""
}

func remarshal(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}
