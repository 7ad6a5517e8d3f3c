package llmtest_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/toolrouterd/toolrouterd/internal/llm/llmtest"
)

// Each case is a request the real API refuses; the fake must refuse it
// too, with the status and a message naming the problem.
type offSpec struct {
	name   string
	body   string
	status int
	want   string
}

func TestResponsesFakeRefusesOffSpecRequests(t *testing.T) {
	fake := llmtest.New(t, llmtest.OpenAIResponses)
	tool := `{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{}},"strict":false}`
	for _, c := range []offSpec{
		{"no model", `{"input":"hi"}`, 400, "Missing required parameter: 'model'"},
		{"unknown parameter", `{"model":"m","input":"hi","messages":[]}`, 400, "Unknown parameter: 'messages'"},
		{"tool without strict", `{"model":"m","input":"hi","tools":[{"type":"function","name":"f","parameters":{}}]}`, 400, "strict"},
		{"bad tool name", `{"model":"m","input":"hi","tools":[` + strings.Replace(tool, "get_weather", "test/echo", 1) + `]}`, 400, "does not match pattern"},
		{"unanswered call", `{"model":"m","store":false,"tools":[` + tool + `],"input":[{"role":"user","content":"hi"},
			{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{}"}]}`, 400, "No tool output found for function call call_1"},
		{"output without call", `{"model":"m","store":false,"input":[{"role":"user","content":"hi"},
			{"type":"function_call_output","call_id":"call_9","output":"x"}]}`, 400, "No tool call found"},
		{"stored id with store false", `{"model":"m","store":false,"tools":[` + tool + `],"input":[{"role":"user","content":"hi"},
			{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":"{}"},
			{"type":"function_call_output","call_id":"call_1","output":"x"}]}`, 400, "Items are not persisted"},
		{"reasoning without encrypted content", `{"model":"m","store":false,"input":[{"role":"user","content":"hi"},
			{"type":"reasoning","id":"rs_1","summary":[]}]}`, 400, "Items are not persisted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := post(t, fake.URL+"/responses", nil, c.body)
			if r.status != c.status || !strings.Contains(errorMessage(r), c.want) {
				t.Fatalf("want %d with %q, got %d %s", c.status, c.want, r.status, r.raw)
			}
		})
	}
	// And one it takes.
	r := post(t, fake.URL+"/responses", nil, `{"model":"m","store":false,"include":["reasoning.encrypted_content"],"tools":[`+tool+`],"input":[{"role":"user","content":"hi"}]}`)
	if r.status != 200 || r.body["object"] != "response" {
		t.Fatalf("a good request: %d %s", r.status, r.raw)
	}
}

func TestGeminiFakeRefusesOffSpecRequests(t *testing.T) {
	fake := llmtest.New(t, llmtest.Gemini, llmtest.WithAPIKey("k"))
	url := fake.URL + "/v1beta/models/gemini-2.5-flash:generateContent"
	key := map[string]string{"x-goog-api-key": "k"}
	call := `{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]}`
	for _, c := range []offSpec{
		{"unknown field", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"messages":[]}`, 400, `unknown field "messages"`},
		{"unknown part field", `{"contents":[{"role":"user","parts":[{"text":"hi","type":"text"}]}]}`, 400, `unknown field "type"`},
		{"OpenAI tool shape", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":[{"type":"function","function":{"name":"f"}}]}`, 400, "unknown field"},
		{"no contents", `{"contents":[]}`, 400, "contents is not specified"},
		{"bad role", `{"contents":[{"role":"assistant","parts":[{"text":"hi"}]}]}`, 400, "valid role"},
		{"unanswered call", `{"contents":[{"role":"user","parts":[{"text":"hi"}]},` + call + `,{"role":"user","parts":[{"text":"and?"}]}]}`, 400, "number of function response parts"},
		{"wrong name", `{"contents":[{"role":"user","parts":[{"text":"hi"}]},` + call + `,{"role":"user","parts":[{"functionResponse":{"name":"g","response":{}}}]}]}`, 400, "does not answer"},
		{"bad function name", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":[{"functionDeclarations":[{"name":"test/echo"}]}]}`, 400, "Invalid function name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := post(t, url, key, c.body)
			if r.status != c.status || !strings.Contains(errorMessage(r), c.want) {
				t.Fatalf("want %d with %q, got %d %s", c.status, c.want, r.status, r.raw)
			}
		})
	}
	if r := post(t, url, nil, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`); r.status != 403 {
		t.Errorf("without a key: want 403, got %d %s", r.status, r.raw)
	}
	if r := post(t, url, key, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`); r.status != 200 {
		t.Errorf("a good request: want 200, got %d %s", r.status, r.raw)
	}
}

// signed posts body to the Bedrock fake, signed with SigV4 as the SDK does.
func signed(t *testing.T, url, body, secret string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		sum := sha256.Sum256([]byte(body))
		creds := aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: secret}
		if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), "bedrock", "us-east-1", time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(b, &e)
	return resp.StatusCode, resp.Header.Get("x-amzn-ErrorType") + ": " + e.Message
}

func TestBedrockFakeRefusesOffSpecRequests(t *testing.T) {
	fake := llmtest.New(t, llmtest.Bedrock)
	url := fake.Origin + "/model/anthropic.claude-3-haiku-20240307-v1:0/converse"
	good := `{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`
	use := `{"role":"assistant","content":[{"toolUse":{"toolUseId":"t1","name":"f","input":{}}}]}`
	cfg := `"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{"type":"object"}}}}]}`
	for _, c := range []offSpec{
		{"unknown member", `{"messages":[{"role":"user","content":[{"text":"hi"}]}],"tools":[]}`, 400, "extraneous key [tools]"},
		{"Anthropic block shape", `{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`, 400, "extraneous key [type]"},
		{"union with two members", `{"messages":[{"role":"user","content":[{"text":"hi","image":{"format":"png","source":{"bytes":"AA=="}}}]}]}`, 400, "exactly one member"},
		{"assistant first", `{"messages":[` + use + `]}`, 400, "must start with a user message"},
		{"roles not alternating", `{"messages":[{"role":"user","content":[{"text":"a"}]},{"role":"user","content":[{"text":"b"}]}]}`, 400, "alternate"},
		{"unanswered toolUse", `{` + cfg + `,"messages":[{"role":"user","content":[{"text":"hi"}]},` + use + `,{"role":"user","content":[{"text":"and?"}]}]}`, 400, "Expected toolResult blocks"},
		{"no toolConfig", `{"messages":[{"role":"user","content":[{"text":"hi"}]},` + use + `,{"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":[{"text":"x"}]}}]}]}`, 400, "toolConfig field must be defined"},
		{"blank text", `{"messages":[{"role":"user","content":[{"text":" "}]}]}`, 400, "is blank"},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, msg := signed(t, url, c.body, llmtest.BedrockSecretKey)
			if status != c.status || !strings.Contains(msg, c.want) {
				t.Fatalf("want %d with %q, got %d %s", c.status, c.want, status, msg)
			}
		})
	}
	if status, msg := signed(t, url, good, ""); status != 403 || !strings.Contains(msg, "Missing Authentication Token") {
		t.Errorf("unsigned: want 403 Missing Authentication Token, got %d %s", status, msg)
	}
	if status, msg := signed(t, url, good, "wrong-secret"); status != 403 || !strings.Contains(msg, "InvalidSignatureException") {
		t.Errorf("wrong secret: want 403 InvalidSignatureException, got %d %s", status, msg)
	}
	if status, msg := signed(t, url, good, llmtest.BedrockSecretKey); status != 200 {
		t.Errorf("a good request: want 200, got %d %s", status, msg)
	}
}
