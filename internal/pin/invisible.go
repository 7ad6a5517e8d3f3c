package pin

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// invisible reports whether r would not show, or would show as something
// else, in a review (issue 32 finding 2): format characters (zero-width
// spaces and joiners, bidi controls, the tag characters U+E0000-E007F,
// the byte order mark, the soft hyphen), variation selectors, the
// combining grapheme joiner, Hangul fillers, and spaces other than
// U+0020. A description changed only by them would look unchanged.
func invisible(r rune) bool {
	switch {
	case r == ' ':
		return false
	case unicode.Is(unicode.Cf, r), unicode.Is(unicode.Zs, r), unicode.Is(unicode.Zl, r), unicode.Is(unicode.Zp, r):
		return true
	case unicode.Is(unicode.Variation_Selector, r), r == 0x034F, r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0:
		return true
	case unicode.Is(unicode.Cc, r) && r != '\n' && r != '\t':
		return true
	case r >= 0xE0000 && r <= 0xE0FFF: // tags and the rest of the plane's ignorables
		return true
	}
	return false
}

// escapeInvisible writes the invisible characters of s escaped, as a JSON
// string would (\u200b; \U000e0041 past the BMP), and reports them.
func escapeInvisible(s string, found map[rune]bool) string {
	if !strings.ContainsFunc(s, invisible) {
		return s
	}
	var sb strings.Builder
	for _, r := range s {
		if !invisible(r) {
			sb.WriteRune(r)
			continue
		}
		found[r] = true
		if r > 0xFFFF {
			fmt.Fprintf(&sb, `\U%08x`, r)
		} else {
			fmt.Fprintf(&sb, `\u%04x`, r)
		}
	}
	return sb.String()
}

// Invisible lists the invisible characters of a definition (as U+XXXX,
// ascending), or nil.
func Invisible(doc []byte) []string {
	found := map[rune]bool{}
	escapeInvisible(string(doc), found)
	return codePoints(found)
}

func codePoints(found map[rune]bool) []string {
	if len(found) == 0 {
		return nil
	}
	rs := make([]rune, 0, len(found))
	for r := range found {
		rs = append(rs, r)
	}
	slices.Sort(rs)
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = fmt.Sprintf("U+%04X", r)
	}
	return out
}
