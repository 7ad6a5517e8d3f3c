package markdown_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/markdown"
)

func TestSplit(t *testing.T) {
	text := "# Title\nsee [x](a.md)\n```yaml\ntools: []\n# not a heading\n```\nafter\n"
	prose, blocks := markdown.Split(text)
	if len(blocks) != 1 || blocks[0].Lang != "yaml" || blocks[0].Text != "tools: []\n# not a heading\n" {
		t.Fatalf("blocks %+v", blocks)
	}
	if strings.Count(prose, "\n") != strings.Count(text, "\n") || strings.Contains(prose, "not a heading") || !strings.Contains(prose, "after") {
		t.Errorf("prose %q: want the block blanked line for line", prose)
	}
}

func TestAnchors(t *testing.T) {
	got := markdown.Anchors("## Runs: limits, cancellation and size\n## `make run`\n## FAQ\n## FAQ\n```\n## in code\n```\n")
	for _, id := range []string{"runs-limits-cancellation-and-size", "make-run", "faq", "faq-1"} {
		if !got[id] {
			t.Errorf("no anchor #%s in %v", id, got)
		}
	}
	if got["in-code"] || len(got) != 4 {
		t.Errorf("anchors %v", got)
	}
}

func TestPages(t *testing.T) {
	pages, err := markdown.Pages("../..")
	if err != nil {
		t.Fatal(err)
	}
	if pages[0] != "README.md" || !slices.Contains(pages, "docs/configuration.md") {
		t.Errorf("pages %v", pages)
	}
}
