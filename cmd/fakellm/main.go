// Command fakellm serves one fake LLM provider (internal/llm/llmtest) so
// integration tests can run the real toolrouterd against a provider process.
//
//	fakellm -provider openai|anthropic|ollama|openai-responses|gemini|bedrock -addr 127.0.0.1:PORT
//	        [-script turns.json] [-always-tool NAME [-always-args JSON]]
//	        [-api-key KEY] [-model NAME] [-no-tool-call-ids] [-demo]
//
// It prints one line, "fakellm: PROVIDER base_url=URL", once it listens (URL
// is the base_url for the registry, CONTRACT §3), and stops on SIGINT or
// SIGTERM. The script file is a JSON list of llmtest.Turn
// ([{"tool_calls":[{"name":"test_echo","arguments":{"msg":"hi"}}]},
// {"text":"done"}]). Besides the provider's endpoint it serves
// GET /_fakellm/requests and /_fakellm/rejections (what it received and
// what it rejected) and POST /_fakellm/script (append turns) and
// /_fakellm/always (answer one turn forever).
//
// -demo (openai or ollama) answers from the conversation instead of a
// script, for the offline quickstart `make run` starts it for: "What is
// 2 + 3?" becomes a call of the offered tool adding a and b, and that
// tool's answer the text "2 + 3 = 5" (demo.go).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/toolrouterd/toolrouterd/internal/llm/llmtest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fakellm:", err)
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// run serves until ctx ends.
func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("fakellm", flag.ContinueOnError)
	var usage strings.Builder
	fs.SetOutput(&usage)
	provider := fs.String("provider", "", "openai, anthropic, ollama, openai-responses, gemini or bedrock")
	addr := fs.String("addr", "127.0.0.1:0", "listen address (port 0: a free one)")
	script := fs.String("script", "", "JSON file: a list of turns answered in order")
	alwaysTool := fs.String("always-tool", "", "answer every request (after the script) with a call of this tool")
	alwaysArgs := fs.String("always-args", "{}", "arguments (a JSON object) of the -always-tool call")
	apiKey := fs.String("api-key", "", "require this key (OpenAI Bearer, Anthropic x-api-key, Gemini x-goog-api-key; Bedrock: the SigV4 access key id, secret llmtest.BedrockSecretKey)")
	model := fs.String("model", "", "know only this model")
	noIDs := fs.Bool("no-tool-call-ids", false, "Ollama: send tool calls without ids (before v0.12.10)")
	demo := fs.Bool("demo", false, "openai or ollama: answer sums (\"What is 2 + 3?\") with a call of the offered adding tool, then its result as text; no script")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w\n%s", err, strings.TrimSpace(usage.String()))
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	p := llmtest.Provider(*provider)
	if !slices.Contains(llmtest.Providers, p) {
		return fmt.Errorf("-provider must be one of %v, not %q", llmtest.Providers, *provider)
	}
	var opts []llmtest.Option
	if *demo {
		if p != llmtest.OpenAI && p != llmtest.Ollama {
			return fmt.Errorf("-demo speaks openai or ollama, not %q", p)
		}
		if *script != "" || *alwaysTool != "" {
			return errors.New("-demo answers from the conversation: it takes neither -script nor -always-tool")
		}
		opts = append(opts, llmtest.WithTurnFunc(demoTurn))
	}
	if *apiKey != "" {
		opts = append(opts, llmtest.WithAPIKey(*apiKey))
	}
	if *model != "" {
		opts = append(opts, llmtest.WithModel(*model))
	}
	if *noIDs {
		opts = append(opts, llmtest.WithoutToolCallIDs())
	}
	var turns []llmtest.Turn
	if *script != "" {
		data, err := os.ReadFile(*script)
		if err != nil {
			return err
		}
		if turns, err = llmtest.ParseTurns(data); err != nil {
			return fmt.Errorf("-script %s: %w", *script, err)
		}
	}
	if *alwaysTool != "" {
		var args map[string]any
		if err := json.Unmarshal([]byte(*alwaysArgs), &args); err != nil {
			return fmt.Errorf("-always-args: %w", err)
		}
		opts = append(opts, llmtest.WithDefault(llmtest.Turn{ToolCalls: []llmtest.Call{{Name: *alwaysTool, Arguments: args}}}))
	}

	s := llmtest.NewServer(p, opts...)
	s.Script(turns...)
	if err := s.Start(*addr); err != nil {
		return err
	}
	defer s.Close()
	fmt.Fprintf(out, "fakellm: %s base_url=%s\n", p, s.URL)
	<-ctx.Done()
	return nil
}
