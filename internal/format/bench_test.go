package format_test

import (
	"encoding/json"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/format"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// benchPayloads are real calls of the providers (testdata/toolcalls.json
// and the providers' docs): the shapes POST /route reads most.
var benchPayloads = []struct{ name, json string }{
	{"openai", `{"id":"call_Y6qJ7ofLgOrBnMD5WbVAeiRV","type":"function","function":{"name":"GetWeatherArgs","arguments":"{\"city\":\"Edinburgh\",\"country\":\"UK\",\"units\":\"c\"}"}}`},
	{"anthropic", `{"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"get_weather","input":{"location":"San Francisco, CA","unit":"celsius"}}`},
	{"langchain", `{"name":"multiply","args":{"a":3,"b":12},"id":"call_GPGPE943GORirhIAYnWv00rK","type":"tool_call"}`},
	{"gemini", `{"functionCall":{"name":"find_theaters","args":{"movie":"Barbie","location":"Mountain View, CA"}}}`},
}

func BenchmarkNormalize(b *testing.B) {
	for _, p := range benchPayloads {
		payload := decode(b, p.json)
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := format.Normalize(payload); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDetect covers the precedence of the rules: the last rule
// (unknown) tries every other first.
func BenchmarkDetect(b *testing.B) {
	payloads := append(benchPayloads[:len(benchPayloads):len(benchPayloads)],
		struct{ name, json string }{"unknown", `{"name":"get_weather","parameters":{"city":"Paris"}}`})
	for _, p := range payloads {
		payload := decode(b, p.json)
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if format.Detect(payload) == "" {
					b.Fatal("no format")
				}
			}
		})
	}
}

// BenchmarkToolResult is the result message of every /route answer:
// built and marshalled, as the service does.
func BenchmarkToolResult(b *testing.B) {
	out := json.RawMessage(`{"temp":21,"unit":"c"}`)
	for _, p := range benchPayloads {
		call, err := format.Normalize(decode(b, p.json))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := json.Marshal(format.ToolResultContent(call, true, out, "", nil)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDefinition(b *testing.B) {
	tool := &toolrouter.Tool{Name: "get_weather", Description: "Current weather in a city.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"}}}
	for _, f := range []toolrouter.Format{toolrouter.FormatOpenAI, toolrouter.FormatGemini, toolrouter.FormatMCP} {
		b.Run(string(f), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if format.Definition(f, tool, 0) == nil {
					b.Fatal("no definition")
				}
			}
		})
	}
}
