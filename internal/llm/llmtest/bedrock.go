package llmtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/schemas"
	"github.com/aws/smithy-go"
	smithytraits "github.com/aws/smithy-go/traits"
)

// The Bedrock fake (POST /model/{modelId}/converse). A request must be
// signed with AWS SigV4 for the service "bedrock": the Authorization header
// is checked for its form, its credential scope and, with the secret key
// BedrockSecretKey, its signature. The body must fit the SDK's own model of
// ConverseRequest (the smithy schemas of
// github.com/aws/aws-sdk-go-v2/service/bedrockruntime/schemas, which the
// SDK serializes with): only known members, one member per union, the
// right JSON types. Then the service's own checks:
//   - the conversation starts with a user message and alternates roles;
//   - the toolUse blocks of an assistant message are answered by toolResult
//     blocks with their ids in the next (user) message, and no toolResult
//     answers anything else;
//   - a conversation with tool blocks has a toolConfig;
//   - tool names match ^[a-zA-Z0-9_-]{1,64}$, text blocks are not blank,
//     image formats are png, jpeg, gif or webp.
//
// With WithAPIKey, the key is the access key id the signature must use.

// BedrockSecretKey is the secret access key the Bedrock fake checks
// signatures with (AWS_SECRET_ACCESS_KEY of the process under test).
const BedrockSecretKey = "llmtest/bedrock/secret/key/0000000000000"

var (
	bedrockToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	sigV4Auth       = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$`)
)

func (s *Server) bedrockReject(w http.ResponseWriter, status int, typ, msg string) {
	s.addRejection(status, typ+": "+msg)
	writeBedrockError(w, status, typ, msg, "")
}

func writeBedrockError(w http.ResponseWriter, status int, typ, msg, retryAfter string) {
	w.Header().Set("x-amzn-ErrorType", typ)
	w.Header().Set("x-amzn-RequestId", randFrom(hexDigits, 8)+"-"+randFrom(hexDigits, 4)+"-"+randFrom(hexDigits, 4)+"-"+randFrom(hexDigits, 4)+"-"+randFrom(hexDigits, 12))
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	writeJSON(w, status, map[string]string{"message": msg})
}

func (s *Server) serveBedrock(w http.ResponseWriter, r *http.Request, rec Recorded) {
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/model/")
	modelEsc, ok2 := strings.CutSuffix(rest, "/converse")
	model, err := url.PathUnescape(modelEsc)
	if !ok || !ok2 || err != nil || model == "" || r.Method != http.MethodPost {
		s.bedrockReject(w, http.StatusNotFound, "UnknownOperationException", "")
		return
	}
	if typ, msg := s.bedrockCheckSignature(r, rec.Raw); msg != "" {
		s.bedrockReject(w, http.StatusForbidden, typ, msg)
		return
	}
	if msg := bedrockCheckRequest(rec.Raw); msg != "" {
		s.bedrockReject(w, http.StatusBadRequest, "ValidationException", msg)
		return
	}
	if s.cfg.model != "" && model != s.cfg.model {
		s.bedrockReject(w, http.StatusBadRequest, "ValidationException", "The provided model identifier is invalid.")
		return
	}
	turn := s.nextTurn(rec)
	if turn.Status != 0 {
		typ, msg := "ValidationException", http.StatusText(turn.Status)
		switch {
		case turn.Status == http.StatusTooManyRequests:
			typ, msg = "ThrottlingException", "Too many requests, please wait before trying again."
		case turn.Status == http.StatusServiceUnavailable:
			typ, msg = "ServiceUnavailableException", "Bedrock is unable to process your request."
		case turn.Status >= 500:
			typ, msg = "InternalServerException", "The server encountered an internal error."
		case turn.Status == http.StatusForbidden || turn.Status == http.StatusUnauthorized:
			typ, msg = "AccessDeniedException", "You don't have access to the model with the specified model ID."
		}
		if turn.ErrorMessage != "" {
			msg = turn.ErrorMessage
		}
		writeBedrockError(w, turn.Status, typ, msg, turn.RetryAfter)
		return
	}
	writeJSON(w, http.StatusOK, bedrockResponse(turn))
}

// bedrockCheckSignature checks the SigV4 Authorization header; msg is ""
// when it is good.
func (s *Server) bedrockCheckSignature(r *http.Request, body []byte) (typ, msg string) {
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return "MissingAuthenticationTokenException", "Missing Authentication Token"
	}
	m := sigV4Auth.FindStringSubmatch(auth)
	if m == nil {
		return "IncompleteSignatureException", "Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' parameters. Authorization=" + auth
	}
	akid, date, region, service, signed, sig := m[1], m[2], m[3], m[4], m[5], m[6]
	if service != "bedrock" {
		return "InvalidSignatureException", fmt.Sprintf("Credential should be scoped to correct service: 'bedrock'. (got %q)", service)
	}
	if key := s.cfg.apiKey; key != "" && akid != key {
		return "UnrecognizedClientException", "The security token included in the request is invalid."
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil || at.Format("20060102") != date {
		return "IncompleteSignatureException", "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header."
	}
	if d := time.Since(at); d > 5*time.Minute || d < -5*time.Minute {
		return "InvalidSignatureException", "Signature expired: " + r.Header.Get("X-Amz-Date") + " is now earlier than allowed."
	}
	// Sign the same request with the known secret and compare.
	names := strings.Split(signed, ";")
	if !slices.Contains(names, "host") || !slices.Contains(names, "x-amz-date") {
		return "InvalidSignatureException", "The request signature must sign host and x-amz-date."
	}
	u := *r.URL
	u.Scheme, u.Host = "http", r.Host
	req, err := http.NewRequestWithContext(context.Background(), r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return "InvalidSignatureException", err.Error()
	}
	req.Header = http.Header{}
	for _, n := range names {
		if n != "host" {
			req.Header[http.CanonicalHeaderKey(n)] = r.Header.Values(n)
		}
	}
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: akid, SecretAccessKey: BedrockSecretKey, SessionToken: r.Header.Get("X-Amz-Security-Token")}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), service, region, at); err != nil {
		return "InvalidSignatureException", err.Error()
	}
	if want := sigV4Auth.FindStringSubmatch(req.Header.Get("Authorization")); want == nil || want[6] != sig {
		return "InvalidSignatureException", "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details."
	}
	return "", ""
}

// bedrockCheckRequest returns the ValidationException message for a body
// the service refuses, "" for one it takes.
func bedrockCheckRequest(raw []byte) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var body any
	if err := dec.Decode(&body); err != nil {
		return "Malformed input request: " + err.Error() + ", please reformat your input and try again."
	}
	if err := fitsSchema(body, schemas.ConverseRequest, ""); err != nil {
		return "Malformed input request: " + err.Error() + ", please reformat your input and try again."
	}
	req := body.(map[string]any)
	msgs, _ := req["messages"].([]any)
	if len(msgs) == 0 {
		return "A conversation must start with a user message. Try again with a conversation that starts with a user message."
	}
	toolBlocks := false
	var pending []string
	for i, m := range msgs {
		mm, _ := m.(map[string]any)
		role, _ := mm["role"].(string)
		switch {
		case i == 0 && role != "user":
			return "A conversation must start with a user message. Try again with a conversation that starts with a user message."
		case i > 0 && role == msgs[i-1].(map[string]any)["role"]:
			return "A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again."
		}
		blocks, _ := mm["content"].([]any)
		if len(blocks) == 0 {
			return fmt.Sprintf("The content field in the Message object at messages.%d is empty. Add a ContentBlock object to the content field and try again.", i)
		}
		var uses, results []string
		for j, b := range blocks {
			bm, _ := b.(map[string]any)
			if t, ok := bm["text"].(string); ok && strings.TrimSpace(t) == "" {
				return fmt.Sprintf("The text field in the ContentBlock object at messages.%d.content.%d is blank. Add text to the text field, and try again.", i, j)
			}
			if tu, ok := bm["toolUse"].(map[string]any); ok {
				uses = append(uses, fmt.Sprint(tu["toolUseId"]))
			}
			if tr, ok := bm["toolResult"].(map[string]any); ok {
				results = append(results, fmt.Sprint(tr["toolUseId"]))
				for k, c := range asList(tr["content"]) {
					if img, ok := c.(map[string]any)["image"].(map[string]any); ok && !slices.Contains([]string{"png", "jpeg", "gif", "webp"}, fmt.Sprint(img["format"])) {
						return fmt.Sprintf("messages.%d.content.%d.toolResult.content.%d.image.format: unsupported image format %v", i, j, k, img["format"])
					}
				}
			}
		}
		toolBlocks = toolBlocks || len(uses) > 0 || len(results) > 0
		if len(results) > 0 && role != "user" {
			return fmt.Sprintf("messages.%d: toolResult blocks must be in a user message", i)
		}
		for _, id := range results {
			if !slices.Contains(pending, id) {
				return fmt.Sprintf("The number of toolResult blocks at messages.%d.content exceeds the number of toolUse blocks of previous turn.", i)
			}
		}
		var missing []string
		for _, id := range pending {
			if !slices.Contains(results, id) {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			return fmt.Sprintf("Expected toolResult blocks at messages.%d.content for the following Ids: %s", i, strings.Join(missing, ", "))
		}
		pending = uses
	}
	if len(pending) > 0 {
		return "A conversation must end with a user message. Try again with a conversation that ends with a user message."
	}
	tc, hasTools := req["toolConfig"].(map[string]any)
	if toolBlocks && !hasTools {
		return "The toolConfig field must be defined when using toolUse and toolResult content blocks."
	}
	for i, t := range asList(tc["tools"]) {
		spec, _ := t.(map[string]any)["toolSpec"].(map[string]any)
		if spec == nil {
			continue
		}
		if name := fmt.Sprint(spec["name"]); !bedrockToolName.MatchString(name) {
			return fmt.Sprintf("1 validation error detected: Value '%s' at 'toolConfig.tools.%d.member.toolSpec.name' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+", name, i+1)
		}
		if d, ok := spec["description"].(string); ok && d == "" {
			return fmt.Sprintf("1 validation error detected: Value at 'toolConfig.tools.%d.member.toolSpec.description' failed to satisfy constraint: Member must have length greater than or equal to 1", i+1)
		}
	}
	return ""
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// fitsSchema checks a decoded JSON value against a smithy schema of the
// SDK (structure members, unions, lists, maps, scalars).
func fitsSchema(v any, s *smithy.Schema, path string) error {
	at := func() string {
		if path == "" {
			return "the body"
		}
		return path
	}
	switch s.Type() {
	case smithy.ShapeTypeStructure, smithy.ShapeTypeUnion:
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: expected an object", at())
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		set := 0
		for _, k := range keys {
			m := s.Member(k)
			if m == nil || bodyless(m) {
				return fmt.Errorf("%s: extraneous key [%s] is not permitted", at(), k)
			}
			if obj[k] == nil {
				continue
			}
			set++
			if err := fitsSchema(obj[k], m, strings.TrimPrefix(path+"."+k, ".")); err != nil {
				return err
			}
		}
		if s.Type() == smithy.ShapeTypeUnion && set != 1 {
			return fmt.Errorf("%s: a union must have exactly one member set, got %d", at(), set)
		}
	case smithy.ShapeTypeList, smithy.ShapeTypeSet:
		list, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: expected an array", at())
		}
		for i, e := range list {
			if err := fitsSchema(e, s.ListMember(), fmt.Sprintf("%s.%d", path, i)); err != nil {
				return err
			}
		}
	case smithy.ShapeTypeMap:
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: expected an object", at())
		}
		for k, e := range obj {
			if err := fitsSchema(e, s.MapValue(), path+"."+k); err != nil {
				return err
			}
		}
	case smithy.ShapeTypeString, smithy.ShapeTypeEnum:
		if _, ok := v.(string); !ok {
			return fmt.Errorf("%s: expected a string", at())
		}
	case smithy.ShapeTypeBlob:
		str, ok := v.(string)
		if _, err := base64.StdEncoding.DecodeString(str); !ok || err != nil {
			return fmt.Errorf("%s: expected base64 data", at())
		}
	case smithy.ShapeTypeBoolean:
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: expected a boolean", at())
		}
	case smithy.ShapeTypeByte, smithy.ShapeTypeShort, smithy.ShapeTypeInteger, smithy.ShapeTypeLong, smithy.ShapeTypeIntEnum,
		smithy.ShapeTypeFloat, smithy.ShapeTypeDouble, smithy.ShapeTypeBigDecimal, smithy.ShapeTypeBigInteger, smithy.ShapeTypeTimestamp:
		if _, ok := v.(json.Number); !ok {
			return fmt.Errorf("%s: expected a number", at())
		}
	case smithy.ShapeTypeDocument: // any JSON
	}
	return nil
}

// bodyless reports whether a member travels outside the body (the model id
// in the URL).
func bodyless(m *smithy.Schema) bool {
	_, label := smithy.SchemaTrait[*smithytraits.HTTPLabel](m)
	_, header := smithy.SchemaTrait[*smithytraits.HTTPHeader](m)
	_, query := smithy.SchemaTrait[*smithytraits.HTTPQuery](m)
	return label || header || query
}

// bedrockResponse is a ConverseResponse as the service sends it. A turn
// with FinishReason sends that stopReason (e.g. guardrail_intervened).
func bedrockResponse(t Turn) map[string]any {
	u := usageOf(t)
	var content []any
	stop := "end_turn"
	if t.Text != "" || len(t.ToolCalls) == 0 {
		content = append(content, map[string]any{"text": t.Text})
	}
	for _, c := range t.ToolCalls {
		id := c.ID
		if id == "" {
			id = "tooluse_" + randFrom(alnum, 22)
		}
		args := c.Arguments
		if args == nil {
			args = map[string]any{}
		}
		content = append(content, map[string]any{"toolUse": map[string]any{"toolUseId": id, "name": c.Name, "input": args}})
		stop = "tool_use"
	}
	if t.FinishReason != "" {
		stop = t.FinishReason
	}
	// Converse's inputTokens leaves out the tokens read from the cache,
	// reported apart (and only when there are some).
	usage := map[string]any{"inputTokens": u.InputTokens - u.CachedInputTokens, "outputTokens": u.OutputTokens, "totalTokens": u.InputTokens + u.OutputTokens}
	if u.CachedInputTokens > 0 {
		usage["cacheReadInputTokens"] = u.CachedInputTokens
		usage["cacheWriteInputTokens"] = 0
	}
	return map[string]any{
		"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": content}},
		"stopReason": stop,
		"usage":      usage,
		"metrics":    map[string]any{"latencyMs": 321},
	}
}
