// Package markdown reads the repository's documentation as its tests do:
// the pages a user reads, their prose, fenced code blocks and heading
// anchors. It serves the docs checks (docs/, no binaries) and the e2e tests
// that run the docs' examples against the real binaries.
package markdown

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// Block is a fenced code block: its info string and its text.
type Block struct{ Lang, Text string }

// Split parts a Markdown file into its prose (code blocks blanked, line
// for line, so that what they hold is not taken for links or headings)
// and its fenced code blocks.
func Split(text string) (prose string, blocks []Block) {
	var p strings.Builder
	var cur *Block
	var body strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		if strings.HasPrefix(line, "```") {
			if cur == nil {
				cur = &Block{Lang: strings.TrimSpace(strings.TrimPrefix(line, "```"))}
				body.Reset()
			} else {
				cur.Text = body.String()
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

// HeadingRE matches a heading line of prose; its group 1 is the title.
var HeadingRE = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)

// Anchors are the fragment ids GitHub gives a Markdown file's headings:
// lower case, punctuation dropped, spaces made hyphens, and -1, -2, … for
// repeats.
func Anchors(text string) map[string]bool {
	prose, _ := Split(text)
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range HeadingRE.FindAllStringSubmatch(prose, -1) {
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

// Pages are the documents a user reads, README.md and docs/*.md, as paths
// from the repository's root, which is root.
func Pages(root string) ([]string, error) {
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, fmt.Errorf("docs/*.md: %w", err)
	}
	if len(pages) == 0 {
		return nil, fmt.Errorf("no docs/*.md under %s", root)
	}
	files := []string{"README.md"}
	for _, p := range pages {
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return nil, fmt.Errorf("docs page %s: %w", p, err)
		}
		files = append(files, filepath.ToSlash(rel))
	}
	return files, nil
}
