package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolrouterd/toolrouterd/internal/llm"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// ToolCall opens the execute_tool span of one routed call (id is its tc_
// id) and returns the context to run it with; end completes it from the
// call's result: gen_ai.tool.name, and error.type (the error category) when
// it failed. The span is INTERNAL; the request to the tool is a CLIENT child.
func (t *Telemetry) ToolCall(ctx context.Context, planID string, seq int64, id string) (context.Context, func(*toolrouter.Result)) {
	if !t.Enabled() {
		return ctx, func(*toolrouter.Result) {}
	}
	ctx, span := t.tracer.Start(ctx, "execute_tool", trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.call.id", id),
		// The tool runs on the gateway's side, calling an external API.
		attribute.String("gen_ai.tool.type", "extension"),
		attribute.String("toolrouterd.plan.id", planID),
		attribute.Int64("toolrouterd.sequence", seq),
	))
	return ctx, func(res *toolrouter.Result) {
		defer span.End()
		if res == nil {
			return
		}
		if res.ToolName != "" {
			span.SetName("execute_tool " + res.ToolName)
			span.SetAttributes(attribute.String("gen_ai.tool.name", res.ToolName))
		}
		span.SetAttributes(attribute.String("toolrouterd.provider_format", string(res.ProviderFormat)))
		if res.ProviderCallID != nil {
			span.SetAttributes(attribute.String("toolrouterd.provider_call_id", *res.ProviderCallID))
		}
		if t.content {
			if b, err := json.Marshal(res.Arguments); err == nil {
				span.SetAttributes(attribute.String("gen_ai.tool.call.arguments", string(b)))
			}
			if res.Success && len(res.Output) > 0 {
				span.SetAttributes(attribute.String("gen_ai.tool.call.result", string(res.Output)))
			}
		}
		if !res.Success && res.ErrorCategory != nil {
			msg := ""
			if res.Error != nil {
				msg = *res.Error
			}
			fail(span, string(*res.ErrorCategory), msg)
		}
	}
}

// Run opens the span of one /runs run (invoke_agent, INTERNAL: the agent
// runs in this process); end records its final status.
func (t *Telemetry) Run(ctx context.Context, run *toolrouter.Run) (context.Context, func(*toolrouter.Run)) {
	if !t.Enabled() {
		return ctx, func(*toolrouter.Run) {}
	}
	ctx, span := t.tracer.Start(ctx, "invoke_agent toolrouterd", trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "invoke_agent"),
		attribute.String("gen_ai.agent.name", "toolrouterd"),
		attribute.String("gen_ai.conversation.id", run.RunID),
		attribute.String("gen_ai.request.model", run.Model),
		attribute.String("toolrouterd.run.id", run.RunID),
		attribute.String("toolrouterd.plan.id", run.Context.PlanID),
		attribute.String("toolrouterd.provider", run.Provider),
	))
	return withLogIDs(ctx, span), func(run *toolrouter.Run) {
		defer span.End()
		span.SetAttributes(attribute.String("toolrouterd.run.status", string(run.Status)), attribute.Int("toolrouterd.run.iterations", run.Iterations))
		if run.Usage != nil {
			span.SetAttributes(attribute.Int64("gen_ai.usage.input_tokens", run.Usage.InputTokens), attribute.Int64("gen_ai.usage.output_tokens", run.Usage.OutputTokens))
		}
		for _, c := range run.Cost { // what the run cost (docs/costs.md), per currency
			span.SetAttributes(attribute.String("toolrouterd.run.cost."+c.Currency, c.Amount.String()))
		}
		if run.Status == toolrouter.RunFailed || run.Status == toolrouter.RunInterrupted {
			msg := ""
			if run.Error != nil {
				msg = *run.Error
			}
			fail(span, string(run.Status), msg)
		}
	}
}

// Iteration opens the span of one loop iteration of a run: a model turn and
// the tool calls it asked for.
func (t *Telemetry) Iteration(ctx context.Context, n int) (context.Context, func()) {
	if !t.Enabled() {
		return ctx, func() {}
	}
	ctx, span := t.tracer.Start(ctx, "iteration "+strconv.Itoa(n), trace.WithAttributes(attribute.Int("toolrouterd.run.iteration", n)))
	return ctx, func() { span.End() }
}

// Adapter wraps an LLM adapter so that each model call is a CLIENT span
// "chat {model}" with the provider, token usage and finish reasons.
// provider is gen_ai.provider.name (openai, anthropic, gcp.gemini,
// aws.bedrock, ollama). With tracing off it returns a.
func (t *Telemetry) Adapter(a llm.Adapter, provider string) llm.Adapter {
	if !t.Enabled() {
		return a
	}
	return &adapter{Adapter: a, t: t, provider: provider}
}

type adapter struct {
	llm.Adapter
	t        *Telemetry
	provider string
}

func (a *adapter) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	ctx, span := a.t.tracer.Start(ctx, "chat "+req.Model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.provider.name", a.provider),
		attribute.String("gen_ai.request.model", req.Model),
	))
	defer span.End()
	if a.t.content {
		if b, err := json.Marshal(req.Messages); err == nil {
			span.SetAttributes(attribute.String("gen_ai.input.messages", string(b)))
		}
	}
	resp, err := a.Adapter.Chat(ctx, req)
	if err != nil {
		errType := "_OTHER"
		var pe *llm.ProviderError
		if errors.As(err, &pe) && pe.Status != 0 {
			errType = strconv.Itoa(pe.Status)
		}
		fail(span, errType, err.Error())
		return resp, err
	}
	if resp.Usage != nil {
		span.SetAttributes(attribute.Int64("gen_ai.usage.input_tokens", resp.Usage.InputTokens), attribute.Int64("gen_ai.usage.output_tokens", resp.Usage.OutputTokens))
		if resp.Usage.CachedInputTokens > 0 {
			// GenAI semantic conventions (experimental): the input tokens
			// served from the provider's cache, part of input_tokens.
			span.SetAttributes(attribute.Int64("gen_ai.usage.cache_read.input_tokens", resp.Usage.CachedInputTokens))
		}
	}
	if resp.StopReason != "" {
		span.SetAttributes(attribute.StringSlice("gen_ai.response.finish_reasons", []string{resp.StopReason}))
	}
	if a.t.content {
		if b, err := json.Marshal(resp); err == nil {
			span.SetAttributes(attribute.String("gen_ai.output.messages", string(b)))
		}
	}
	return resp, nil
}
