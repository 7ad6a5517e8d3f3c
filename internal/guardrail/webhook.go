package guardrail

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"unicode/utf8"

	"github.com/toolrouterd/toolrouterd/internal/outbound"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// The hook protocol (api/openapi.yaml GuardrailRequest and
// GuardrailAnswer; docs/trusting-tools.md "Guardrail hooks").
const (
	decisionAllow  = "allow"
	decisionDeny   = "deny"
	decisionModify = "modify"
	decisionError  = "error" // no valid answer (audit records only)

	// MaxAnswerBytes bounds a hook's answer: a longer one is a hook error.
	MaxAnswerBytes = 4 << 20
	// maxReason bounds the reason of an answer (the caller sees it).
	maxReason = 1024
)

// request is the body POSTed to a webhook.
type request struct {
	Guardrail  string         `json:"guardrail"`
	Phase      string         `json:"phase"`
	Client     string         `json:"client"`
	Tool       string         `json:"tool"`
	Arguments  map[string]any `json:"arguments"`
	PlanID     string         `json:"plan_id"`
	ToolCallID string         `json:"tool_call_id"`
	Result     *requestResult `json:"result,omitempty"`
}

// requestResult is the result an after-hook judges.
type requestResult struct {
	Output json.RawMessage `json:"output"`
}

// answer is a webhook's valid answer.
type answer struct {
	Decision  string          `json:"decision"`
	Reason    string          `json:"reason,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
}

// NewClient is the HTTP client of the webhooks: the outbound transport
// (wrapped, e.g. for tracing, when wrap is not nil) and no redirects (a
// redirect is an answer that is not 200, hence a hook error).
func NewClient(wrap func(http.RoundTripper) http.RoundTripper) *http.Client {
	var rt http.RoundTripper = outbound.NewTransport()
	if wrap != nil {
		rt = wrap(rt)
	}
	return &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// ask calls webhook h for c in phase (output: the tool's output, after
// only) and returns its answer, checked; an error is a hook error
// (on_error), worded for the caller (never the URL: it may hold a secret).
func (g *Guards) ask(ctx context.Context, h *hook, phase string, c *Call, output json.RawMessage) (answer, error) {
	body := request{Guardrail: h.Name, Phase: phase, Client: c.Client, Tool: c.Tool.Name, Arguments: c.Args,
		PlanID: c.PlanID, ToolCallID: c.ToolCallID}
	if body.Arguments == nil {
		body.Arguments = map[string]any{}
	}
	if output != nil {
		body.Result = &requestResult{Output: output}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return answer{}, fmt.Errorf("the call cannot be encoded: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.Endpoint, bytes.NewReader(b))
	if err != nil {
		return answer{}, errors.New("the request cannot be built")
	}
	for k, v := range h.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Toolrouter-Guardrail", h.Name)
	req.Header.Set("X-Toolrouter-Tool-Call-Id", c.ToolCallID)
	resp, err := g.Client.Do(req)
	if err != nil {
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return answer{}, fmt.Errorf("no answer within %s (timeout)", h.Timeout)
		case ctx.Err() != nil:
			return answer{}, errors.New("the call was cancelled")
		case outbound.Unreachable(err):
			return answer{}, errors.New("the webhook is unreachable")
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return answer{}, fmt.Errorf("the request failed: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return answer{}, fmt.Errorf("the webhook answered %s, not 200", resp.Status)
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return answer{}, errors.New("the webhook's answer is not application/json")
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBytes+1))
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return answer{}, fmt.Errorf("no answer within %s (timeout)", h.Timeout)
	case err != nil:
		return answer{}, errors.New("the answer could not be read")
	case len(data) > MaxAnswerBytes:
		return answer{}, fmt.Errorf("the answer is larger than %d MiB", MaxAnswerBytes>>20)
	}
	a, err := parseAnswer(data, phase)
	if err != nil {
		return answer{}, fmt.Errorf("invalid answer: %v", err)
	}
	return a, nil
}

// parseAnswer decodes and checks an answer strictly: one JSON object, no
// unknown, duplicate or case-variant members (exactMembers), a known decision, arguments (an object) with a
// before-phase modify only, output with an after-phase modify only.
func parseAnswer(data []byte, phase string) (answer, error) {
	if err := exactMembers(data); err != nil {
		return answer{}, err
	}
	var raw struct {
		Decision  *string         `json:"decision"`
		Reason    *string         `json:"reason"`
		Arguments json.RawMessage `json:"arguments"`
		Output    json.RawMessage `json:"output"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return answer{}, fmt.Errorf("not a JSON object of decision, reason, arguments, output: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return answer{}, errors.New("data after the JSON object")
	}
	var a answer
	if raw.Decision == nil {
		return a, errors.New("decision is required")
	}
	a.Decision = *raw.Decision
	if raw.Reason != nil {
		if len(*raw.Reason) > maxReason || !utf8.ValidString(*raw.Reason) {
			return a, fmt.Errorf("reason must be valid UTF-8 of at most %d bytes", maxReason)
		}
		a.Reason = *raw.Reason
	}
	hasArgs, hasOutput := raw.Arguments != nil, raw.Output != nil
	switch a.Decision {
	case decisionAllow, decisionDeny:
		if hasArgs || hasOutput {
			return a, fmt.Errorf("decision %s takes no arguments or output", a.Decision)
		}
	case decisionModify:
		if phase == toolrouter.PhaseBefore {
			if hasOutput || !hasArgs {
				return a, errors.New("decision modify before the call takes arguments (an object), not output")
			}
			if t := bytes.TrimSpace(raw.Arguments); len(t) == 0 || t[0] != '{' {
				return a, errors.New("arguments must be a JSON object")
			}
			a.Arguments = raw.Arguments
		} else {
			if hasArgs || !hasOutput {
				return a, errors.New("decision modify after the call takes output, not arguments")
			}
			a.Output = raw.Output
		}
	default:
		return a, fmt.Errorf("decision must be allow, deny or modify, got %q", a.Decision)
	}
	return a, nil
}

// answerMembers are the members of an answer, spelled exactly.
var answerMembers = map[string]bool{"decision": true, "reason": true, "arguments": true, "output": true}

// exactMembers refuses an answer object whose member names are not exactly
// those of the protocol, or that repeats one. encoding/json matches names
// case-insensitively and lets the last duplicate win, so
// {"decision":"deny","Decision":"allow"} would otherwise be read as an
// allow by toolrouterd while a proxy or a log reader sees a deny. Anything
// that is not an object is left to the decoder's own error.
func exactMembers(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	seen := make(map[string]bool, len(answerMembers))
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil // malformed: the decoder says how
		}
		name, _ := t.(string)
		switch {
		case !answerMembers[name]:
			return fmt.Errorf("unknown member %q (members are decision, reason, arguments and output, spelled exactly so)", name)
		case seen[name]:
			return fmt.Errorf("member %q appears twice", name)
		}
		seen[name] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil
		}
	}
	return nil
}
