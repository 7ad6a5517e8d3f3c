package telemetry

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolrouterd/toolrouterd/internal/llm"
)

// usageAdapter answers every turn with a usage.
type usageAdapter struct {
	llm.Adapter
	u llm.Usage
}

func (a usageAdapter) Chat(context.Context, llm.Request) (llm.Response, error) {
	u := a.u
	return llm.Response{Content: "ok", Usage: &u}, nil
}

// TestChatSpanUsage: a model turn's span has the GenAI usage attributes,
// the cache reads too (docs/costs.md "Where costs show").
func TestChatSpanUsage(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tel := &Telemetry{tp: tp, tracer: tp.Tracer("test")}
	a := tel.Adapter(usageAdapter{u: llm.Usage{InputTokens: 1000, OutputTokens: 100, CachedInputTokens: 200}}, "openai")
	if _, err := a.Chat(context.Background(), llm.Request{Model: "gpt-4o"}); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	got := map[attribute.Key]int64{}
	for _, kv := range spans[0].Attributes() {
		if kv.Value.Type() == attribute.INT64 {
			got[kv.Key] = kv.Value.AsInt64()
		}
	}
	for k, want := range map[attribute.Key]int64{"gen_ai.usage.input_tokens": 1000, "gen_ai.usage.output_tokens": 100, "gen_ai.usage.cache_read.input_tokens": 200} {
		if got[k] != want {
			t.Errorf("%s = %d, want %d", k, got[k], want)
		}
	}
}
