package llmtest

import "math/rand/v2"

const (
	alnum     = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	lowerNum  = "abcdefghijklmnopqrstuvwxyz0123456789"
	hexDigits = "0123456789abcdef"
)

func randFrom(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rand.IntN(len(alphabet))]
	}
	return string(b)
}

// OpenAI: chatcmpl-ABfvaueLEMLNYbT8YzpJxsmiQ6HSY, call_fdNz3vOBKYgOIpMdWotB9MjY,
// fp_b40fb1c6fb (openai_chat_*.json).
func openAICompletionID() string { return "chatcmpl-" + randFrom(alnum, 29) }
func openAICallID() string       { return "call_" + randFrom(alnum, 24) }
func openAIFingerprint() string  { return "fp_" + randFrom(hexDigits, 10) }

// Anthropic: msg_01UBZt9MX63Tk3v1gKvgxk3A, toolu_01LRanfq6DmHn1yDTB4d1SAh
// (anthropic_*.json), req_011CTWFpbkpKZzpBJezq7xnK (error bodies).
func anthropicMessageID() string { return "msg_01" + randFrom(alnum, 22) }
func anthropicToolUseID() string { return "toolu_01" + randFrom(alnum, 22) }
func anthropicRequestID() string { return "req_011C" + randFrom(alnum, 20) }

// Ollama (server/routes.go toolCallId): "call_" + 8 of [a-z0-9].
func ollamaCallID() string { return "call_" + randFrom(lowerNum, 8) }
