// Package bedrock is the llm.Adapter for the Amazon Bedrock Converse API,
// registry kind "bedrock". It talks through the AWS SDK for Go v2
// (service/bedrockruntime): requests are signed with SigV4 using the
// credentials of the SDK's default chain (environment, shared config and
// credentials files, SSO, web identity, ECS and EC2 roles), for the region
// the registry names; base_url, when set, overrides the endpoint.
//
// The SDK serializes and parses the wire format itself: PrepareRequest is
// the body the SDK would send (captured before signing), ParseResponse
// decodes a body with the SDK's own deserializer.
package bedrock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/toolrouterd/toolrouterd/internal/format"
	"github.com/toolrouterd/toolrouterd/internal/llm"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Provider is the name used in errors and spans (the registry kind).
const Provider = "bedrock"

// Adapter speaks Converse. It is safe for concurrent use.
type Adapter struct {
	client *bedrockruntime.Client
	// urlSecrets are the credentials base_url may carry (llm.URLSecrets).
	urlSecrets []string
}

var _ llm.Adapter = (*Adapter)(nil)

// New returns an adapter for region, with credentials from the default
// chain (config.LoadDefaultConfig). cfg.BaseURL, when set, is the endpoint
// (tests, VPC endpoints); cfg.APIKey is not used; cfg.MaxRetries bounds the
// SDK's retries of throttling and server errors.
//
// Model calls go through llm.NewClient(cfg.HTTPClient): no redirect is
// followed (the signed request and its session token stay with the
// endpoint) and an answer stops at llm.MaxResponseBytes.
func New(ctx context.Context, cfg llm.Config, region string) (*Adapter, error) {
	if strings.TrimSpace(region) == "" {
		return nil, fmt.Errorf("%s: no region", Provider)
	}
	opts := []func(*config.LoadOptions) error{config.WithRegion(region)}
	switch {
	case cfg.MaxRetries > 0:
		opts = append(opts, config.WithRetryMaxAttempts(cfg.MaxRetries+1))
	case cfg.MaxRetries < 0:
		opts = append(opts, config.WithRetryMaxAttempts(1))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: loading the AWS configuration: %w", Provider, err)
	}
	base := strings.TrimRight(strings.TrimSpace(cfg.BaseURL), "/")
	client := bedrockruntime.NewFromConfig(awsCfg, func(o *bedrockruntime.Options) {
		if base != "" {
			o.BaseEndpoint = aws.String(base)
		}
		// toolrouterd's own client (its transport, traceparent, no
		// redirects, capped answers) for the model calls; the SDK's own
		// for the credential providers (STS, SSO, IMDS), which honour
		// AWS_CA_BUNDLE.
		o.HTTPClient = llm.NewClient(cfg.HTTPClient)
	})
	return &Adapter{client: client, urlSecrets: llm.URLSecrets(base)}, nil
}

// input builds the Converse input. System messages become system blocks;
// consecutive messages of one role are merged so that user and assistant
// alternate; the results answering an assistant turn's toolUse blocks all
// go, first, in the user message after it.
func input(req llm.Request) (*bedrockruntime.ConverseInput, error) {
	if len(req.Messages) == 0 {
		return nil, fmt.Errorf("%s: request has no messages", Provider)
	}
	in := &bedrockruntime.ConverseInput{ModelId: aws.String(req.Model)}
	var pending []string
	toolBlocks := false
	answering := false
	add := func(role types.ConversationRole, blocks ...types.ContentBlock) {
		if n := len(in.Messages); n > 0 && in.Messages[n-1].Role == role {
			in.Messages[n-1].Content = append(in.Messages[n-1].Content, blocks...)
			return
		}
		in.Messages = append(in.Messages, types.Message{Role: role, Content: blocks})
	}
	for i, m := range req.Messages {
		if m.Role != llm.RoleTool && m.Role != llm.RoleSystem && len(pending) > 0 {
			return nil, fmt.Errorf("%s: message %d (%s): tool call(s) %s have no tool result", Provider, i, m.Role, strings.Join(pending, ", "))
		}
		if m.Role != llm.RoleTool {
			answering = false
		}
		switch m.Role {
		case llm.RoleSystem:
			if m.Content != "" {
				in.System = append(in.System, &types.SystemContentBlockMemberText{Value: m.Content})
			}
		case llm.RoleUser:
			if m.Content != "" { // Bedrock rejects blank text blocks
				add(types.ConversationRoleUser, &types.ContentBlockMemberText{Value: m.Content})
			}
		case llm.RoleAssistant:
			blocks, err := reasoningBlocks(m.Provider)
			if err != nil {
				return nil, fmt.Errorf("%s: message %d: %w", Provider, i, err)
			}
			if m.Content != "" {
				blocks = append(blocks, &types.ContentBlockMemberText{Value: m.Content})
			}
			for _, tc := range m.ToolCalls {
				if tc.ID == "" || slices.Contains(pending, tc.ID) {
					return nil, fmt.Errorf("%s: message %d: tool call %q has a missing or duplicate id %q", Provider, i, tc.Name, tc.ID)
				}
				args := tc.Arguments
				if args == nil {
					args = map[string]any{}
				}
				blocks = append(blocks, &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{
					ToolUseId: aws.String(tc.ID), Name: aws.String(tc.Name), Input: document.NewLazyDocument(args)}})
				pending = append(pending, tc.ID)
				toolBlocks = true
			}
			if len(blocks) > 0 {
				add(types.ConversationRoleAssistant, blocks...)
			}
		case llm.RoleTool:
			j := slices.Index(pending, m.ToolCallID)
			if m.ToolCallID == "" || j < 0 {
				return nil, fmt.Errorf("%s: message %d: tool result for %q answers no toolUse of the preceding assistant turn", Provider, i, m.ToolCallID)
			}
			pending = slices.Delete(pending, j, j+1)
			block, ok := m.Formatted.(types.ContentBlock)
			if !ok {
				b, err := resultBlock(m.ToolCallID, m.Name, !m.IsError, llm.TextJSON(m.Content), m.Content)
				if err != nil {
					return nil, fmt.Errorf("%s: message %d: %w", Provider, i, err)
				}
				block = b
			}
			if !answering {
				in.Messages = append(in.Messages, types.Message{Role: types.ConversationRoleUser})
				answering = true
			}
			last := &in.Messages[len(in.Messages)-1]
			last.Content = append(last.Content, block)
		default:
			return nil, fmt.Errorf("%s: message %d: unknown role %q", Provider, i, m.Role)
		}
	}
	if len(pending) > 0 {
		return nil, fmt.Errorf("%s: tool call(s) %s have no tool result", Provider, strings.Join(pending, ", "))
	}
	if len(in.Messages) == 0 {
		return nil, fmt.Errorf("%s: request has no user or assistant content", Provider)
	}
	switch req.ToolChoice {
	case "", "auto", "required", "none":
	default:
		return nil, fmt.Errorf("%s: unknown tool_choice %q (want auto, required or none)", Provider, req.ToolChoice)
	}
	// Converse has no "none" choice: the tools are left out, unless the
	// conversation holds tool blocks, which need a toolConfig.
	if len(req.Tools) > 0 && (req.ToolChoice != "none" || toolBlocks) {
		tc := &types.ToolConfiguration{}
		for _, t := range req.Tools {
			spec := types.ToolSpecification{Name: aws.String(t.Name),
				InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(llm.ToolParameters(t.Parameters))}}
			if t.Description != "" { // at least 1 character when present
				spec.Description = aws.String(t.Description)
			}
			tc.Tools = append(tc.Tools, &types.ToolMemberToolSpec{Value: spec})
		}
		switch req.ToolChoice {
		case "auto":
			tc.ToolChoice = &types.ToolChoiceMemberAuto{}
		case "required":
			tc.ToolChoice = &types.ToolChoiceMemberAny{}
		}
		in.ToolConfig = tc
	}
	if req.MaxTokens > 0 {
		in.InferenceConfig = &types.InferenceConfiguration{MaxTokens: aws.Int32(int32(min(req.MaxTokens, 1<<31-1)))}
	}
	return in, nil
}

// reasoning is a reasoning block of an assistant turn, kept in
// Response.Provider: models that think (Claude with extended thinking)
// want them back, signature and all, before the turn's toolUse blocks.
type reasoning struct {
	Text      *string `json:"text,omitempty"`
	Signature *string `json:"signature,omitempty"`
	Redacted  []byte  `json:"redacted,omitempty"`
}

func reasoningBlocks(raw json.RawMessage) ([]types.ContentBlock, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var rs []reasoning
	if err := json.Unmarshal(raw, &rs); err != nil {
		return nil, fmt.Errorf("the turn's reasoning blocks: %w", err)
	}
	out := make([]types.ContentBlock, 0, len(rs))
	for _, r := range rs {
		var rc types.ReasoningContentBlock = &types.ReasoningContentBlockMemberReasoningText{Value: types.ReasoningTextBlock{Text: r.Text, Signature: r.Signature}}
		if r.Redacted != nil {
			rc = &types.ReasoningContentBlockMemberRedactedContent{Value: r.Redacted}
		}
		out = append(out, &types.ContentBlockMemberReasoningContent{Value: rc})
	}
	return out, nil
}

// resultBlock is the toolResult block of format.ToolResult (docs/mcp.md
// "Images and other media in results"): a JSON object output as a json
// block, other output and errors as text, images as image blocks.
func resultBlock(callID, name string, success bool, output json.RawMessage, errText string) (types.ContentBlock, error) {
	b, err := json.Marshal(format.ToolResult(toolrouter.Call{Format: toolrouter.FormatBedrock, ProviderCallID: callID, ToolName: name}, success, output, errText))
	if err != nil {
		return nil, fmt.Errorf("encoding the tool result: %w", err)
	}
	var r struct {
		ToolResult struct {
			ToolUseID string `json:"toolUseId"`
			Status    string `json:"status"`
			Content   []struct {
				Text  *string         `json:"text"`
				JSON  json.RawMessage `json:"json"`
				Image *struct {
					Format string `json:"format"`
					Source struct {
						Bytes []byte `json:"bytes"`
					} `json:"source"`
				} `json:"image"`
			} `json:"content"`
		} `json:"toolResult"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("decoding the tool result: %w", err)
	}
	tr := types.ToolResultBlock{ToolUseId: aws.String(r.ToolResult.ToolUseID), Status: types.ToolResultStatus(r.ToolResult.Status)}
	for _, c := range r.ToolResult.Content {
		switch {
		case c.Image != nil:
			tr.Content = append(tr.Content, &types.ToolResultContentBlockMemberImage{Value: types.ImageBlock{
				Format: types.ImageFormat(c.Image.Format), Source: &types.ImageSourceMemberBytes{Value: c.Image.Source.Bytes}}})
		case c.JSON != nil:
			var v map[string]any
			if err := json.Unmarshal(c.JSON, &v); err != nil {
				return nil, fmt.Errorf("decoding the tool output: %w", err)
			}
			tr.Content = append(tr.Content, &types.ToolResultContentBlockMemberJson{Value: document.NewLazyDocument(v)})
		case c.Text != nil:
			tr.Content = append(tr.Content, &types.ToolResultContentBlockMemberText{Value: *c.Text})
		}
	}
	return &types.ContentBlockMemberToolResult{Value: tr}, nil
}

// FormatToolResult is the toolResult content block (a types.ContentBlock):
// {"toolResult": {"toolUseId", "status", "content": [{"json"} | {"text"} |
// {"image"}]}}.
func (a *Adapter) FormatToolResult(toolCallID, toolName string, result llm.ToolResult) any {
	b, err := resultBlock(toolCallID, toolName, result.Success, result.Output, result.Text())
	if err != nil {
		text := result.Text()
		return &types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{ToolUseId: aws.String(toolCallID), Status: types.ToolResultStatusError,
			Content: []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: text}}}}
	}
	return b
}

// captured carries the serialized body out of the SDK's middleware stack.
type captured struct{ body []byte }

func (*captured) Error() string { return "request captured" }

// PrepareRequest is the Converse body as the SDK serializes it (captured
// in the build step, before the request is signed or sent).
func (a *Adapter) PrepareRequest(req llm.Request) (json.RawMessage, error) {
	in, err := input(req)
	if err != nil {
		return nil, err
	}
	capture := middleware.BuildMiddlewareFunc("toolrouterdCapture", func(ctx context.Context, in middleware.BuildInput, _ middleware.BuildHandler) (middleware.BuildOutput, middleware.Metadata, error) {
		r, ok := in.Request.(*smithyhttp.Request)
		if !ok {
			return middleware.BuildOutput{}, middleware.Metadata{}, fmt.Errorf("unexpected request type %T", in.Request)
		}
		var body []byte
		if s := r.GetStream(); s != nil {
			b, err := io.ReadAll(s)
			if err != nil {
				return middleware.BuildOutput{}, middleware.Metadata{}, err
			}
			body = b
		}
		return middleware.BuildOutput{}, middleware.Metadata{}, &captured{body: body}
	})
	_, err = a.client.Converse(context.Background(), in, func(o *bedrockruntime.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error { return s.Build.Add(capture, middleware.After) })
	})
	var c *captured
	if !errors.As(err, &c) {
		return nil, fmt.Errorf("%s: serializing the request: %w", Provider, err)
	}
	return c.body, nil
}

// bodyDoer answers every request with one 200 JSON body.
type bodyDoer []byte

func (b bodyDoer) Do(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"application/json"}},
		Body:    io.NopCloser(strings.NewReader(string(b))),
		Request: r, ContentLength: int64(len(b))}, nil
}

// ParseResponse decodes a Converse response body with the SDK's
// deserializer and reads it like Chat does.
func (a *Adapter) ParseResponse(body []byte) (llm.Response, error) {
	in := &bedrockruntime.ConverseInput{ModelId: aws.String("parse"), Messages: []types.Message{{Role: types.ConversationRoleUser,
		Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "parse"}}}}}
	out, err := a.client.Converse(context.Background(), in, func(o *bedrockruntime.Options) {
		o.HTTPClient = bodyDoer(body)
		o.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "parse", SecretAccessKey: "parse"}, nil // nothing is sent
		})
		o.RetryMaxAttempts = 1
	})
	if err != nil {
		return llm.Response{}, fmt.Errorf("%s: decoding response: %w", Provider, err)
	}
	return response(out)
}

// failStop are the stop reasons that end a run with an error.
var failStop = map[types.StopReason]string{
	types.StopReasonGuardrailIntervened:        "a guardrail intervened",
	types.StopReasonContentFiltered:            "the content was filtered",
	types.StopReasonMalformedModelOutput:       "the model's output was malformed",
	types.StopReasonMalformedToolUse:           "the model's tool use was malformed",
	types.StopReasonModelContextWindowExceeded: "the model's context window was exceeded",
}

// response reads a Converse output: text blocks joined, toolUse blocks as
// tool calls (in order), reasoning blocks kept as Response.Provider, usage
// (cache reads and writes count as input).
func response(out *bedrockruntime.ConverseOutput) (llm.Response, error) {
	var r llm.Response
	r.StopReason = string(out.StopReason)
	if why, bad := failStop[out.StopReason]; bad {
		return r, &llm.ProviderError{Provider: Provider, Status: http.StatusOK, Message: fmt.Sprintf("%s (stopReason %s)", why, out.StopReason)}
	}
	if u := out.Usage; u != nil {
		r.Usage = &llm.Usage{InputTokens: int64(aws.ToInt32(u.InputTokens)) + int64(aws.ToInt32(u.CacheReadInputTokens)) + int64(aws.ToInt32(u.CacheWriteInputTokens)),
			OutputTokens: int64(aws.ToInt32(u.OutputTokens)), CachedInputTokens: int64(aws.ToInt32(u.CacheReadInputTokens))}
	}
	msg, ok := out.Output.(*types.ConverseOutputMemberMessage)
	if !ok {
		return r, fmt.Errorf("%s: the response has no message", Provider)
	}
	var text strings.Builder
	var thoughts []reasoning
	seen := map[string]bool{}
	for i, b := range msg.Value.Content {
		switch b := b.(type) {
		case *types.ContentBlockMemberText:
			text.WriteString(b.Value)
		case *types.ContentBlockMemberToolUse:
			name := aws.ToString(b.Value.Name)
			if name == "" {
				return r, fmt.Errorf("%s: toolUse block %d has no name", Provider, i)
			}
			// Through JSON: UnmarshalSmithyDocument would leave numbers as
			// document.Number, which tools' schemas do not take.
			args := map[string]any{}
			if b.Value.Input != nil {
				raw, err := b.Value.Input.MarshalSmithyDocument()
				if err == nil {
					err = json.Unmarshal(raw, &args)
				}
				if err != nil {
					return r, fmt.Errorf("%s: toolUse %q: input is not a JSON object: %w", Provider, name, err)
				}
				if args == nil {
					args = map[string]any{}
				}
			}
			id := aws.ToString(b.Value.ToolUseId)
			if id == "" || seen[id] {
				id = llm.NewCallID()
			}
			seen[id] = true
			r.ToolCalls = append(r.ToolCalls, llm.ToolCall{ID: id, Name: name, Arguments: args})
		case *types.ContentBlockMemberReasoningContent:
			switch rc := b.Value.(type) {
			case *types.ReasoningContentBlockMemberReasoningText:
				thoughts = append(thoughts, reasoning{Text: rc.Value.Text, Signature: rc.Value.Signature})
			case *types.ReasoningContentBlockMemberRedactedContent:
				thoughts = append(thoughts, reasoning{Redacted: rc.Value})
			}
		}
	}
	r.Content = text.String()
	if len(thoughts) > 0 && len(r.ToolCalls) > 0 {
		r.Provider, _ = json.Marshal(thoughts)
	}
	return r, nil
}

// Chat sends one turn with the SDK's Converse.
func (a *Adapter) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	in, err := input(req)
	if err != nil {
		return llm.Response{}, err
	}
	out, err := a.client.Converse(ctx, in)
	if err != nil {
		return llm.Response{}, providerError(ctx, err, a.redactor(ctx))
	}
	return response(out)
}

// redactor scrubs the request's credentials from error text: an endpoint
// (or a proxy in front of it) that echoes the request's headers would
// otherwise put the access key id and the session token in the run's
// error. The credentials come from the client's cache, as signing got them.
func (a *Adapter) redactor(ctx context.Context) func(string) string {
	secrets := a.urlSecrets
	if p := a.client.Options().Credentials; p != nil {
		if c, err := p.Retrieve(context.WithoutCancel(ctx)); err == nil {
			secrets = append(slices.Clip(secrets), c.AccessKeyID, c.SecretAccessKey, c.SessionToken)
		}
	}
	return llm.Redactor(secrets...)
}

// providerError is the error of a failed Converse call: the caller's
// context error when it ended, else a *llm.ProviderError with the HTTP
// status and the service's error code and message, passed through redact.
func providerError(ctx context.Context, err error, redact func(string) string) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", Provider, ctx.Err())
	}
	pe := &llm.ProviderError{Provider: Provider, Message: err.Error()}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		pe.Message = ae.ErrorCode() + ": " + ae.ErrorMessage()
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		pe.Status = re.HTTPStatusCode()
	}
	var tooBig *llm.TooLargeError
	if errors.As(err, &tooBig) {
		pe.Message = tooBig.Error()
	}
	var moved *llm.RedirectError
	if errors.As(err, &moved) {
		pe.Status, pe.Message = moved.Status, moved.Error()
	}
	pe.Message = redact(pe.Message)
	return pe
}
