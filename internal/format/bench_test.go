package format_test

import (
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/format"
)

func BenchmarkNormalize(b *testing.B) {
	payloads := []struct{ name, json string }{
		{"openai", `{"id":"call_Y6qJ7ofLgOrBnMD5WbVAeiRV","type":"function","function":{"name":"GetWeatherArgs","arguments":"{\"city\":\"Edinburgh\",\"country\":\"UK\",\"units\":\"c\"}"}}`},
		{"anthropic", `{"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"get_weather","input":{"location":"San Francisco, CA","unit":"celsius"}}`},
		{"langchain", `{"name":"multiply","args":{"a":3,"b":12},"id":"call_GPGPE943GORirhIAYnWv00rK","type":"tool_call"}`},
		{"gemini", `{"functionCall":{"name":"find_theaters","args":{"movie":"Barbie","location":"Mountain View, CA"}}}`},
	}
	for _, p := range payloads {
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
