package e2e_test

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"
)

// codeBlock is a fenced block of a Markdown file: its info string and
// its text.
type codeBlock struct{ lang, text string }

// splitMarkdown parts a Markdown file into its prose (code blocks
// blanked, so that what they hold is not taken for links or headings) and
// its fenced code blocks.
func splitMarkdown(text string) (prose string, blocks []codeBlock) {
	var p strings.Builder
	var cur *codeBlock
	var body strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		if strings.HasPrefix(line, "```") {
			if cur == nil {
				cur = &codeBlock{lang: strings.TrimSpace(strings.TrimPrefix(line, "```"))}
				body.Reset()
			} else {
				cur.text = body.String()
				blocks = append(blocks, *cur)
				cur = nil
			}
			p.WriteString("\n")
			continue
		}
		if cur != nil {
			body.WriteString(line)
			p.WriteString("\n")
			continue
		}
		p.WriteString(line)
	}
	return p.String(), blocks
}

var (
	headingRE    = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)
	inlineCodeRE = regexp.MustCompile("`[^`\n]*`")
	linkRE       = regexp.MustCompile(`\]\(([^)\s]+)\)`)
)

// anchors are the fragment ids GitHub gives a Markdown file's headings:
// lower case, punctuation dropped, spaces made hyphens, and -1, -2, … for
// repeats.
func anchors(text string) map[string]bool {
	prose, _ := splitMarkdown(text)
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range headingRE.FindAllStringSubmatch(prose, -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		id := b.String()
		if n := seen[id]; n > 0 {
			out[fmt.Sprintf("%s-%d", id, n)] = true
		} else {
			out[id] = true
		}
		seen[id]++
	}
	return out
}

// TestDocsLinksResolve: every relative link of README.md and docs/*.md
// names a file of the repository, and a heading of it when it has a
// #fragment.
func TestDocsLinksResolve(t *testing.T) {
	checked := 0
	for _, f := range docFiles(t) {
		b, err := os.ReadFile("../" + f)
		if err != nil {
			t.Fatal(err)
		}
		prose, _ := splitMarkdown(string(b))
		prose = inlineCodeRE.ReplaceAllString(prose, "")
		for _, m := range linkRE.FindAllStringSubmatch(prose, -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			target, frag, _ := strings.Cut(link, "#")
			file := f
			if target != "" {
				file = path.Clean(path.Join(path.Dir(f), target))
			}
			checked++
			text, err := os.ReadFile("../" + file)
			if err != nil {
				if st, serr := os.Stat("../" + file); serr == nil && st.IsDir() && frag == "" {
					continue
				}
				t.Errorf("%s: link %s: %s does not exist", f, link, file)
				continue
			}
			if frag != "" && !anchors(string(text))[frag] {
				t.Errorf("%s: link %s: %s has no heading #%s", f, link, file, frag)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked %d relative links; the scan is broken", checked)
	}
}

// TestReadmeShortWithContents: README.md stays what a user needs in the
// first hour (under 400 lines), with a table of contents linking each of
// its sections, and links the docs index, which links every page.
func TestReadmeShortWithContents(t *testing.T) {
	r := readme(t)
	if n := strings.Count(r, "\n"); n >= 400 {
		t.Errorf("README.md has %d lines; keep it under 400 and move reference text to docs/", n)
	}
	prose, _ := splitMarkdown(r)
	_, toc, ok := strings.Cut(prose, "\n## Contents\n")
	if !ok {
		t.Fatal(`README.md has no "## Contents" section`)
	}
	toc, _, _ = strings.Cut(toc, "\n## ")
	sections := regexp.MustCompile(`(?m)^## +(.+?) *$`).FindAllStringSubmatch(prose, -1)
	if len(sections) < 3 {
		t.Fatalf("README.md has %d sections; the scan is broken", len(sections))
	}
	for _, m := range sections {
		for id := range anchors("## " + m[1]) {
			if id != "contents" && !strings.Contains(toc, "](#"+id+")") {
				t.Errorf("README.md's contents do not link its section %q (#%s)", m[1], id)
			}
		}
	}
	if !strings.Contains(r, "](docs/README.md)") {
		t.Error("README.md does not link the docs index, docs/README.md")
	}
	index, err := os.ReadFile("../docs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range docFiles(t)[1:] {
		if page := strings.TrimPrefix(f, "docs/"); page != "README.md" && !strings.Contains(string(index), "]("+page+")") {
			t.Errorf("docs/README.md does not link %s", page)
		}
	}
}

// registryKeys are the top-level keys of a registry file.
var registryKeys = []string{"tools", "providers", "default_provider", "mcp_servers", "clients", "virtual_servers", "discovery", "guardrails"}

// TestDocsRegistryBlocksCheck: each ```yaml block of README.md and
// docs/*.md that is a registry file (it starts with a top-level registry
// key) passes `toolrouterd check`, with every variable it names set. A
// block that is a fragment of a larger registry is listed with the
// problems it has on its own, and must have exactly those.
func TestDocsRegistryBlocksCheck(t *testing.T) {
	fragments := map[string][]string{
		// Overrides of an MCP server's tools, which the block does not define.
		"docs/mcp.md virtual_servers:": {`virtual server "support": overrides.gh/create_issue: names no tool of the registry (nor of an MCP server, by its prefix)`},
		// A key_sha256 elided to its first digits; support-ui's virtual server is docs/mcp.md's.
		"docs/security.md clients:": {
			`client "support-bot": key_sha256: must be the key's SHA-256 as 64 hex digits (sha256sum of the key)`,
			`client "support-ui": virtual_servers[0]: no virtual server named "support" (defined: none)`,
		},
	}
	// Every *_env key names a variable: key_env, api_key_env, and the
	// backend credentials' token_env, client_id_env, client_secret_env.
	varRE := regexp.MustCompile(`\$\{(\w+)\}|_env: (\w+)|api_key_env: (\w+)`)
	dir := t.TempDir()
	checked := 0
	for _, f := range docFiles(t) {
		b, err := os.ReadFile("../" + f)
		if err != nil {
			t.Fatal(err)
		}
		_, blocks := splitMarkdown(string(b))
		for i, blk := range blocks {
			first, _, _ := strings.Cut(blk.text, ":")
			if blk.lang != "yaml" || !slices.Contains(registryKeys, first) {
				continue
			}
			checked++
			name := fmt.Sprintf("%s %s:", f, first)
			file := filepath.Join(dir, fmt.Sprintf("%s-%d.yaml", strings.NewReplacer("/", "-", ".", "-").Replace(f), i))
			if err := os.WriteFile(file, []byte(blk.text), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(filepath.Join(binDir, "toolrouterd"), "check", file)
			cmd.Env = os.Environ()
			for _, m := range varRE.FindAllStringSubmatch(blk.text, -1) {
				cmd.Env = append(cmd.Env, m[1]+m[2]+m[3]+"=value-of-"+m[1]+m[2]+m[3]) // distinct: one key is one client
			}
			out, err := cmd.CombinedOutput()
			want, isFragment := fragments[name]
			if !isFragment {
				if err != nil || !strings.Contains(string(out), file+": ok") {
					t.Errorf("%s's ```yaml block %d does not pass toolrouterd check: %v\n%s", f, i, err, out)
				}
				continue
			}
			delete(fragments, name)
			var got []string
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if _, problem, ok := strings.Cut(l, ".yaml:"); ok && problem != "" && problem[0] >= '0' && problem[0] <= '9' {
					_, problem, _ = strings.Cut(problem, ": ")
					got = append(got, problem)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s's ```yaml block %d (a fragment): toolrouterd check found\n%s\nwant exactly:\n%s", f, i, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
	}
	for name := range fragments {
		t.Errorf("no ```yaml block %s: update the fragments of this test", name)
	}
	if checked < 8 {
		t.Fatalf("checked %d registry blocks; the scan is broken", checked)
	}
}

// TestDocsCheckSessions runs each shell session of README.md and docs/*.md
// whose commands are all `bin/toolrouterd check FILE` (FILE in the
// repository or written by the session) and `printf … > /tmp/FILE`, and
// compares what they print with what the session shows.
func TestDocsCheckSessions(t *testing.T) {
	checkRE := regexp.MustCompile(`^bin/toolrouterd check (\S+)$`)
	printfRE := regexp.MustCompile(`^printf .* > (/tmp/\S+)$`)
	ran := 0
	for _, f := range docFiles(t) {
		b, err := os.ReadFile("../" + f)
		if err != nil {
			t.Fatal(err)
		}
		_, blocks := splitMarkdown(string(b))
	block:
		for i, blk := range blocks {
			if !strings.HasPrefix(blk.text, "$ ") {
				continue
			}
			tmp := t.TempDir()
			written := map[string]bool{}
			var script, want []string
			for _, l := range strings.Split(strings.TrimSuffix(blk.text, "\n"), "\n") {
				cmd, isCmd := strings.CutPrefix(l, "$ ")
				if !isCmd {
					want = append(want, strings.ReplaceAll(l, "/tmp/", tmp+"/"))
					continue
				}
				cmd, _, _ = strings.Cut(cmd, "#")
				cmd = strings.TrimSpace(cmd)
				if m := printfRE.FindStringSubmatch(cmd); m != nil {
					written[m[1]] = true
				} else if m := checkRE.FindStringSubmatch(cmd); m == nil {
					continue block
				} else if _, err := os.Stat("../" + m[1]); err != nil && !written[m[1]] {
					continue block // a file of the reader's own
				}
				cmd = strings.ReplaceAll(cmd, "/tmp/", tmp+"/")
				script = append(script, strings.Replace(cmd, "bin/toolrouterd", filepath.Join(binDir, "toolrouterd"), 1)+" 2>&1 || true")
			}
			ran++
			cmd := exec.Command("bash", "-c", strings.Join(script, "\n"))
			cmd.Dir = ".."
			out, err := cmd.Output()
			if got := strings.TrimSuffix(string(out), "\n"); err != nil || got != strings.Join(want, "\n") {
				t.Errorf("%s's session %d prints:\n%s\n(%v), it shows:\n%s", f, i, got, err, strings.Join(want, "\n"))
			}
		}
	}
	if ran == 0 {
		t.Fatal("no toolrouterd check session found in README.md and docs/")
	}
}

var (
	// citeRE is a citation of a documentation section: README or
	// docs/PAGE.md, then the section's heading in double quotes.
	citeRE = regexp.MustCompile(`(?:^|[^\w/.-])(README|docs/[\w-]+\.md)(?:\.md)?(?:'s)?,? "([^"]+)"`)
	// commentMarkRE is what starts a comment line: indentation and a
	// comment marker of Go, YAML, shell, SQL or a block comment.
	commentMarkRE = regexp.MustCompile(`^\s*(?://+|#+|--+|\*+)?\s*`)
)

// citedFiles are the files of the repository whose comments and messages
// may point a reader at a section of the documentation.
func citedFiles(t *testing.T) []string {
	t.Helper()
	exts := []string{".go", ".yaml", ".yml", ".sh", ".md", ".feature", ".sql", ".js", ".mjs", ".py", ".tpl", ".html", ".txt"}
	var files []string
	err := filepath.WalkDir("..", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			// bin and tmp are gitignored: built tools and scratch files.
			if p != ".." && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "bin" || p == filepath.Join("..", "tmp")) {
				return filepath.SkipDir
			}
			return nil
		}
		if name != "CHANGELOG.md" && (name == "Makefile" || name == "Dockerfile" || slices.Contains(exts, filepath.Ext(name))) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// joinLines joins text's lines into one, each without its indentation and
// comment marker, so that a citation wrapped over two comment lines reads
// as one; starts[i] is where line i+1 begins in it.
func joinLines(text string) (joined string, starts []int) {
	var b strings.Builder
	for i, l := range strings.Split(text, "\n") {
		if i > 0 {
			b.WriteByte(' ')
		}
		starts = append(starts, b.Len())
		b.WriteString(strings.TrimRight(commentMarkRE.ReplaceAllString(l, ""), " \t\r"))
	}
	return b.String(), starts
}

// TestDocsCitationsResolve: every citation of a section in the code,
// scripts, manifests and docs (README or docs/PAGE.md followed by a quoted
// heading) names a page that exists and a heading of it: the heading
// itself, or its start before " — " or ": ". A reader who follows the
// pointer finds the text.
func TestDocsCitationsResolve(t *testing.T) {
	headings := map[string][]string{}
	for _, f := range docFiles(t) {
		b, err := os.ReadFile("../" + f)
		if err != nil {
			t.Fatal(err)
		}
		prose, _ := splitMarkdown(string(b))
		for _, m := range headingRE.FindAllStringSubmatch(prose, -1) {
			headings[f] = append(headings[f], strings.ReplaceAll(m[1], "`", ""))
		}
	}
	resolves := func(page, section string) bool {
		for _, h := range headings[page] {
			if h == section || strings.HasPrefix(h, section+" — ") || strings.HasPrefix(h, section+": ") {
				return true
			}
		}
		return false
	}
	checked := 0
	for _, f := range citedFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text, starts := joinLines(string(b))
		for _, m := range citeRE.FindAllStringSubmatchIndex(text, -1) {
			page, section := text[m[2]:m[3]], text[m[4]:m[5]]
			if page == "README" {
				page = "README.md"
			}
			line := sort.SearchInts(starts, m[2]+1)
			checked++
			if _, ok := headings[page]; !ok {
				t.Errorf("%s:%d: cites %s %q: no such page", strings.TrimPrefix(f, "../"), line, page, section)
			} else if !resolves(page, section) {
				t.Errorf("%s:%d: cites %s %q: the page has no such heading", strings.TrimPrefix(f, "../"), line, page, section)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("checked %d citations; the scan is broken", checked)
	}
}
