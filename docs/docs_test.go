// Package docs_test checks the documentation as text: links, citations,
// the README's size and contents. It starts no binary and no server, so it
// runs in `make test-unit`; the checks that run the docs' examples against
// the real binaries are in e2e (docs_test.go, docs_pages_test.go).
package docs_test

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/markdown"
)

var (
	inlineCodeRE = regexp.MustCompile("`[^`\n]*`")
	linkRE       = regexp.MustCompile(`\]\(([^)\s]+)\)`)
)

// docFiles are the documents a user reads: README.md and docs/*.md, as
// paths from the repository's root (..).
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := markdown.Pages("..")
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// readme is README.md's text.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
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
		prose, _ := markdown.Split(string(b))
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
			if frag != "" && !markdown.Anchors(string(text))[frag] {
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
	prose, _ := markdown.Split(r)
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
		for id := range markdown.Anchors("## " + m[1]) {
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
		prose, _ := markdown.Split(string(b))
		for _, m := range markdown.HeadingRE.FindAllStringSubmatch(prose, -1) {
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

// TestShippedFilesCiteOnlyWhatShips: the deployment and example files a user
// copies cite no document the repository does not have (they once cited
// "CONTRACT §3").
func TestShippedFilesCiteOnlyWhatShips(t *testing.T) {
	for _, dir := range []string{"../deployments", "../examples"} {
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if strings.Contains(string(b), "CONTRACT") {
				t.Errorf("%s cites CONTRACT, which is not in the repository", path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// notForUsers are the pages written for contributors (architecture,
// development), the benchmark figures and the generated list of secret
// rules: every other page of docs/ is a user's.
var notForUsers = map[string]bool{"docs/README.md": true, "docs/architecture.md": true, "docs/development.md": true,
	"docs/benchmarks.md": true, "docs/secret-rules.md": true}

var (
	// implementationRE is what a user page's prose does not name: a test
	// file, test or e2e directory, an issue, or a Go package of the
	// repository (internal/x, or x.Name of one; a data file such as
	// internal/cost/models.json is a file a user may read).
	implementationRE = regexp.MustCompile("(_test\\.go|`e2e/|`Test[A-Z]\\w*`|\\(issue \\d+|internal/[a-z0-9/]+[a-z0-9]`|`(?:access|agent|cost|format|httpapi|mcpclient|mcpserver|pipeline|registry|router|service|store|toolrouter|vserver)\\.[A-Z]\\w*)")
	headingRE        = regexp.MustCompile(`(?m)^# .+\n\n`)
)

// TestUserPagesOpenForTheUser (issue 38 item 6): each user page of docs/
// opens, under its title, with whom it is for and what they do with it
// ("For operators who …: …"), and its prose, and the README's, names no
// test file, issue or Go package: those are in docs/architecture.md and
// the code.
func TestUserPagesOpenForTheUser(t *testing.T) {
	pages := 0
	for _, f := range docFiles(t) {
		if f != "README.md" && !strings.HasPrefix(f, "docs/") || notForUsers[f] {
			continue
		}
		pages++
		b, err := os.ReadFile("../" + f)
		if err != nil {
			t.Fatal(err)
		}
		prose, _ := markdown.Split(string(b))
		if loc := headingRE.FindStringIndex(prose); f != "README.md" && (loc == nil || loc[0] != 0 || !strings.HasPrefix(prose[loc[1]:], "For ")) {
			t.Errorf("%s does not open, under its title, with whom it is for (\"For operators who …: …\")", f)
		}
		for i, line := range strings.Split(prose, "\n") {
			if m := implementationRE.FindString(line); m != "" {
				t.Errorf("%s:%d: %q is an implementation detail (move it to docs/architecture.md or a code comment): %s", f, i+1, m, line)
			}
		}
	}
	if pages < 10 {
		t.Fatalf("checked %d user pages; the scan is broken", pages)
	}
}
