// Command context is `make bench-context` (docs/output-budgets.md "What full
// lists and tool search cost"): for a catalogue of real MCP tool definitions
// (catalogue.json, collected by collect.mjs), the tokens a model is
// offered per turn with every definition listed (discovery: full) against
// the two meta-tools plus one search answer (discovery: search), counted
// with OpenAI's o200k_base (tiktoken) and with @anthropic-ai/tokenizer
// (Claude's older tokenizer, run by anthropic-count.mjs), and the search's
// recall@5 on the labelled tasks of tasks.json.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toolrouterd/toolrouterd/internal/codemode"
	"github.com/toolrouterd/toolrouterd/internal/shape"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
	"github.com/toolrouterd/toolrouterd/internal/vserver"
)

type tool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"inputSchema"`
	Source      struct {
		Package string `json:"package"`
		Version string `json:"version"`
	} `json:"source"`
}

// Searcher ranks tools for a query: the tool search of discovery: search.
type Searcher interface {
	Search(query string, limit int) []*tool
}

// toolSearch is toolrouterd's own tool search (internal/vserver) over the
// catalogue.
func toolSearch(tools []*tool) Searcher {
	byTool := map[*toolrouter.Tool]*tool{}
	list := make([]*toolrouter.Tool, len(tools))
	for i, t := range tools {
		list[i] = &toolrouter.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
		byTool[list[i]] = t
	}
	return searcher{vserver.NewIndex(list), byTool}
}

type searcher struct {
	ix     *vserver.Index
	byTool map[*toolrouter.Tool]*tool
}

func (s searcher) Search(query string, limit int) []*tool {
	var out []*tool
	for _, t := range s.ix.Search(query, limit) {
		out = append(out, s.byTool[t])
	}
	return out
}

func main() {
	dir := flag.String("dir", "bench/context", "the folder of catalogue.json, tasks.json, prefixes.json")
	tokDir := flag.String("tokenizer-dir", "", "the folder holding node_modules/@anthropic-ai/tokenizer")
	flag.Parse()
	if err := run(*dir, *tokDir); err != nil {
		fmt.Fprintln(os.Stderr, "bench-context:", err)
		os.Exit(1)
	}
}

func run(dir, tokDir string) error {
	var cat struct{ Tools []*tool }
	var tasks struct {
		Tasks []struct {
			Task   string
			Accept []string
		}
	}
	var prefixes map[string]string
	for name, v := range map[string]any{"catalogue.json": &cat, "tasks.json": &tasks, "prefixes.json": &prefixes} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, v); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	packages := map[string]bool{}
	for _, t := range cat.Tools {
		p, ok := prefixes[t.Source.Package]
		if !ok {
			return fmt.Errorf("prefixes.json: no prefix for %s", t.Source.Package)
		}
		// Canonical names as a gateway exports them: server prefix + tool.
		if !strings.HasPrefix(t.Name, p+"_") {
			t.Name = p + "_" + t.Name
		}
		packages[t.Source.Package+"@"+t.Source.Version] = true
	}

	// Recall of the search.
	var s Searcher = toolSearch(cat.Tools)
	hit1, hit5 := 0, 0
	var answers []string // each task's search_tools answer, as the model reads it
	for _, task := range tasks.Tasks {
		found := s.Search(task.Task, 5)
		for i, f := range found {
			if slices.Contains(task.Accept, f.Name) {
				hit5++
				if i == 0 {
					hit1++
				}
				break
			}
		}
		answers = append(answers, searchAnswer(found))
	}

	// The texts to count: the full list in each provider's format, the
	// meta-tools, each search answer; then subsets of the catalogue.
	rng := rand.New(rand.NewPCG(23, 5))
	sizes := []int{5, 10, 20, 30, 50, 100, len(cat.Tools)}
	var texts []string
	for _, n := range sizes {
		sub := cat.Tools
		if n < len(sub) {
			perm := rng.Perm(len(cat.Tools))[:n]
			sub = make([]*tool, n)
			for i, j := range perm {
				sub[i] = cat.Tools[j]
			}
		}
		texts = append(texts, openAITools(sub), anthropicTools(sub))
	}
	texts = append(texts, openAIMeta(), anthropicMeta())
	texts = append(texts, answers...)

	sh := shape.New()
	oa := make([]int, len(texts))
	for i, t := range texts {
		n, err := sh.Tokens(t)
		if err != nil {
			return err
		}
		oa[i] = n
	}
	an, err := anthropicCounts(tokDir, texts)
	if err != nil {
		return err
	}

	k := 2 * len(sizes)
	metaOA, metaAN := oa[k], an[k+1]
	ansOA, ansAN := oa[k+2:], an[k+2:]
	fmt.Printf("catalogue: %d real tool definitions from %d npm packages (bench/context/catalogue.json)\n", len(cat.Tools), len(packages))
	fmt.Printf("tasks: %d labelled phrasings (bench/context/tasks.json)\n\n", len(tasks.Tasks))
	fmt.Printf("tokens offered per turn           OpenAI o200k_base   Anthropic (older tokenizer)\n")
	fmt.Printf("full, all %3d definitions          %8d            %8d\n", len(cat.Tools), oa[k-2], an[k-1])
	fmt.Printf("search, the 2 meta-tools           %8d            %8d\n", metaOA, metaAN)
	fmt.Printf("search, one answer (5 tools) mean  %8d            %8d\n", mean(ansOA), mean(ansAN))
	fmt.Printf("search, one answer p95             %8d            %8d\n", pct(ansOA, 95), pct(ansAN, 95))
	fmt.Printf("search, meta-tools + mean answer   %8d            %8d\n\n", metaOA+mean(ansOA), metaAN+mean(ansAN))
	// A task of one tool call: full mode is two model turns (call, then
	// answer) offered every definition; search mode is three (search, call,
	// answer) offered the meta-tools, the search answer staying in the
	// conversation for the last two.
	fmt.Printf("per task of one tool call (tool definitions + search answers read, over its model turns):\n")
	fmt.Printf("  full = 2 turns x full list; search = 3 turns x meta-tools + 2 x mean answer\n")
	fmt.Printf("catalogue size (random subsets)   full OpenAI / Anthropic   search OpenAI / Anthropic   search wins\n")
	so, sa := 3*metaOA+2*mean(ansOA), 3*metaAN+2*mean(ansAN)
	for i, n := range sizes {
		f, fa := 2*oa[2*i], 2*an[2*i+1]
		fmt.Printf("%4d tools                        %8d / %-8d         %8d / %-8d        %v\n", n, f, fa, so, sa, f > so && fa > sa)
	}
	fmt.Printf("\nsearch recall@5: %.2f (%d/%d), recall@1: %.2f (%d/%d)\n",
		float64(hit5)/float64(len(tasks.Tasks)), hit5, len(tasks.Tasks), float64(hit1)/float64(len(tasks.Tasks)), hit1, len(tasks.Tasks))
	return multiStep(cat.Tools, tokDir)
}

// multiStep plays the multi-step tasks (multistep.go) in the three
// discovery modes for catalogues of several sizes, and prints the tokens
// that pass through the model and the calls made.
func multiStep(all []*tool, tokDir string) error {
	tasks := multiTasks()
	byName := map[string]*tool{}
	for _, t := range all {
		byName[t.Name] = t
	}
	var need []*tool
	for _, t := range tasks {
		for _, s := range t.Steps {
			tl, ok := byName[s.Tool]
			if !ok {
				return fmt.Errorf("multi-step task %q: no tool %s in the catalogue", t.Name, s.Tool)
			}
			if !slices.Contains(need, tl) {
				need = append(need, tl)
			}
		}
	}
	// 0: each task offered only its own tools (2-5): the smallest
	// catalogue a task can have.
	sizes := []int{0, len(need), 50, 100, len(all)}
	sh := shape.New()
	oaCache := map[string]int{}
	oa := func(s string) int {
		if n, ok := oaCache[s]; ok {
			return n
		}
		n, _ := sh.Tokens(s)
		oaCache[s] = n
		return n
	}
	// Two passes: the first collects the texts for the Anthropic
	// tokenizer (one node process), the second counts with it.
	var texts []string
	seen := map[string]bool{}
	collect := func(s string) int {
		if !seen[s] {
			seen[s] = true
			texts = append(texts, s)
		}
		return 0
	}
	play := func(count countFn) ([][3]modeFigures, error) {
		var out [][3]modeFigures
		for _, n := range sizes {
			rng := rand.New(rand.NewPCG(35, uint64(n)))
			sub := slices.Clone(need)
			for _, i := range rng.Perm(len(all)) {
				if len(sub) >= n {
					break
				}
				if !slices.Contains(sub, all[i]) {
					sub = append(sub, all[i])
				}
			}
			s := toolSearch(sub)
			find := func(q string, code bool) string { return foundAnswer(s.Search(q, 3), code) }
			var f [3]modeFigures
			full, meta, codeMeta := count(openAITools(sub)), count(openAIMeta()), count(openAITools(codeMetaTools()))
			r := rand.New(rand.NewPCG(35, 1))
			for _, t := range tasks {
				if n == 0 {
					var own []*tool
					for _, st := range t.Steps {
						if !slices.Contains(own, byName[st.Tool]) {
							own = append(own, byName[st.Tool])
						}
					}
					full = count(openAITools(own))
					s := toolSearch(own)
					find = func(q string, code bool) string { return foundAnswer(s.Search(q, 3), code) }
				}
				if err := playTask(t, r, full, meta, codeMeta, find, count, &f); err != nil {
					return nil, err
				}
			}
			out = append(out, f)
		}
		return out, nil
	}
	figOA, err := play(oa)
	if err != nil {
		return err
	}
	if _, err := play(collect); err != nil {
		return err
	}
	counts, err := anthropicCounts(tokDir, texts)
	if err != nil {
		return err
	}
	anMap := map[string]int{}
	for i, t := range texts {
		anMap[t] = counts[i]
	}
	figAN, err := play(func(s string) int { return anMap[s] })
	if err != nil {
		return err
	}
	steps := 0
	for _, t := range tasks {
		steps += len(t.Steps)
	}
	fmt.Printf("\nmulti-step tasks: %d, each 2-5 chained calls (%d calls in all) with outputs sized as the servers' (bench/context/multistep.go);\n", len(tasks), steps)
	fmt.Printf("scripted turns: full = a turn per call + the answer; search = a search per distinct tool + a call_tool per call + the answer;\n")
	fmt.Printf("code = the same searches (signatures) + one execute_code (the program run in internal/codemode) + the answer.\n")
	fmt.Printf("tokens through the model = definitions offered on every turn + results read (each once) + what the model wrote (calls, programs);\n")
	fmt.Printf("billed input = the same turns if every turn resends the whole conversation. Sums over all tasks.\n\n")
	fmt.Printf("%-9s %-6s %6s %8s %9s %10s %10s %8s %12s %12s %12s\n", "catalogue", "mode", "turns", "model", "backend", "defs", "results", "written", "through", "through", "billed in")
	fmt.Printf("%-9s %-6s %6s %8s %9s %10s %10s %8s %12s %12s %12s\n", "", "", "", "calls", "calls", "o200k", "o200k", "o200k", "o200k", "Anthropic", "o200k")
	for i, n := range sizes {
		for j, mode := range []string{"full", "search", "code"} {
			f, a := figOA[i][j], figAN[i][j]
			size := fmt.Sprintf("%4d", n)
			if n == 0 {
				size = "own"
			}
			fmt.Printf("%-4s      %-6s %6d %8d %9d %10d %10d %8d %12d %12d %12d\n", size, mode, f.turns, f.modelCalls, f.backendCalls, f.defs, f.results, f.written, f.through(), a.through(), f.billed)
		}
	}
	fmt.Printf("(catalogue \"own\": each task offered only the 2-5 tools it uses; %d: the tools of all the tasks; larger: those plus random others)\n", len(need))
	return nil
}

// foundAnswer is search_tools' answer as the model reads it: with each
// tool's signature, and its input schema in search mode only.
func foundAnswer(found []*tool, code bool) string {
	type entry struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Signature   string         `json:"signature"`
		InputSchema map[string]any `json:"input_schema,omitempty"`
	}
	out := []entry{}
	for _, t := range found {
		e := entry{Name: t.Name, Description: t.Description, Signature: codemode.Signature(t.Name, t.InputSchema, nil)}
		if !code {
			e.InputSchema = schema(t)
		}
		out = append(out, e)
	}
	return mustJSON(map[string]any{"tools": out})
}

// codeMetaTools are search_tools and execute_code as discovery: code
// lists them (internal/vserver's definitions).
func codeMetaTools() []*tool {
	var out []*tool
	for _, t := range vserver.CodeTools() {
		out = append(out, &tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema})
	}
	return out
}

// searchAnswer is search_tools' answer as the model reads it.
func searchAnswer(found []*tool) string {
	type entry struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		InputSchema map[string]any `json:"input_schema"`
	}
	out := []entry{}
	for _, t := range found {
		out = append(out, entry{t.Name, t.Description, schema(t)})
	}
	return mustJSON(map[string]any{"tools": out})
}

func schema(t *tool) map[string]any {
	if t.InputSchema == nil {
		return map[string]any{"type": "object"}
	}
	return t.InputSchema
}

// openAITools is the tools list of a Chat Completions request.
func openAITools(ts []*tool) string {
	var out []any
	for _, t := range ts {
		out = append(out, map[string]any{"type": "function", "function": map[string]any{"name": t.Name, "description": t.Description, "parameters": schema(t)}})
	}
	return mustJSON(out)
}

// anthropicTools is the tools list of a Messages request.
func anthropicTools(ts []*tool) string {
	var out []any
	for _, t := range ts {
		out = append(out, map[string]any{"name": t.Name, "description": t.Description, "input_schema": schema(t)})
	}
	return mustJSON(out)
}

// metaTools are search_tools and call_tool as discovery: search lists them
// (internal/vserver's definitions).
func metaTools() []*tool {
	return []*tool{
		{Name: "search_tools", Description: "Search the tools available to you by what you want to do. Returns the best matching tools' names, descriptions and input schemas; call one with call_tool.",
			InputSchema: map[string]any{"type": "object", "required": []any{"query"}, "properties": map[string]any{
				"query": map[string]any{"type": "string", "description": "What you want to do, in a few words"},
				"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": 50, "description": "How many tools to return (default 5)"},
			}}},
		{Name: "call_tool", Description: "Call a tool that search_tools found, by its name, with arguments matching its input schema.",
			InputSchema: map[string]any{"type": "object", "required": []any{"name"}, "properties": map[string]any{
				"name":      map[string]any{"type": "string", "description": "The tool's name, as search_tools returned it"},
				"arguments": map[string]any{"type": "object", "description": "The tool's arguments"},
			}}},
	}
}

func openAIMeta() string    { return openAITools(metaTools()) }
func anthropicMeta() string { return anthropicTools(metaTools()) }

// anthropicCounts counts texts with @anthropic-ai/tokenizer.
func anthropicCounts(dir string, texts []string) ([]int, error) {
	if dir == "" {
		return nil, fmt.Errorf("-tokenizer-dir is required (run through bench/context/run.sh)")
	}
	cmd := exec.Command("node", "bench/context/anthropic-count.mjs", dir)
	cmd.Stdin = strings.NewReader(mustJSON(texts))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("anthropic tokenizer: %w: %s", err, stderr.String())
	}
	var counts []int
	if err := json.Unmarshal(out, &counts); err != nil || len(counts) != len(texts) {
		return nil, fmt.Errorf("anthropic tokenizer: %d counts for %d texts (%v)", len(counts), len(texts), err)
	}
	return counts, nil
}

func mustJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func mean(xs []int) int {
	if len(xs) == 0 {
		return 0
	}
	sum := 0
	for _, x := range xs {
		sum += x
	}
	return (sum + len(xs)/2) / len(xs)
}

func pct(xs []int, p int) int {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	return s[min(len(s)-1, (len(s)*p+99)/100-1)]
}
