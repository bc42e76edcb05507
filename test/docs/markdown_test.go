package docs

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// link is a relative Markdown link: the file it points to (empty for one
// into the same file) and the heading anchor, if any.
type link struct {
	line           int
	target, anchor string
}

// inlineLink matches [text](target) and ![alt](target), up to the first
// space (a title may follow) or closing parenthesis.
var inlineLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// codeSpan matches an inline code span, whose brackets are not links.
var codeSpan = regexp.MustCompile("`+[^`]*`+")

// scan returns the relative links of a Markdown text and the anchors of
// its headings, leaving out fenced code blocks and code spans.
func scan(text string) (links []link, anchors map[string]bool) {
	anchors = map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		if h, ok := heading(line); ok {
			slug := slugify(h)
			if n := seen[slug]; n > 0 {
				anchors[slug+"-"+strconv.Itoa(n)] = true
			} else {
				anchors[slug] = true
			}
			seen[slug]++
		}
		for _, m := range inlineLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			if l, ok := relative(m[1]); ok {
				l.line = i + 1
				links = append(links, l)
			}
		}
	}
	return links, anchors
}

// heading returns the text of an ATX heading line.
func heading(line string) (string, bool) {
	level := len(line) - len(strings.TrimLeft(line, "#"))
	if level == 0 || level > 6 || len(line) == level || line[level] != ' ' {
		return "", false
	}
	return strings.TrimSpace(strings.TrimRight(strings.TrimSpace(line[level:]), "#")), true
}

// relative splits a link target into file and anchor; links with a
// scheme (https:, mailto:) are not relative.
func relative(target string) (link, bool) {
	if strings.HasPrefix(target, "<") || regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`).MatchString(target) {
		return link{}, false
	}
	file, anchor, _ := strings.Cut(target, "#")
	return link{target: file, anchor: anchor}, true
}

// markup is what GitHub drops from a heading's text before making its
// anchor: code ticks, emphasis, and a link's target (its text stays).
var markup = regexp.MustCompile(`\]\([^)]*\)|[` + "`" + `*\[\]]`)

// slugify makes a heading's anchor as GitHub does: the text in lower case,
// every character but letters, digits, spaces, hyphens and underscores
// dropped, and each space made a hyphen.
func slugify(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(markup.ReplaceAllString(h, "")) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
