package cluster

import (
	"bytes"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// blockLine is one line of a block YAML document: its indentation, its
// text without it or trailing spaces, and where the line starts in the
// document.
type blockLine struct {
	indent int
	start  int
	text   string
}

// blockLines cuts doc into its lines that are not blank. The lines are
// views of doc, not copies (a copy of each line was a third of converting
// a large List). They live only in convertBlock: what is kept is written
// into its output. What a line holds is checked where the parser takes
// it (blockText, literalText), so that a line it cannot take costs only
// the List item that holds it (yamlitem.go).
func blockLines(doc []byte) ([]blockLine, error) {
	lines := make([]blockLine, 0, bytes.Count(doc, []byte("\n"))+1)
	text := unsafe.String(unsafe.SliceData(doc), len(doc))
	for at := 0; at < len(doc); {
		line := text[at:]
		next := len(doc)
		if i := strings.IndexByte(line, '\n'); i >= 0 {
			line, next = line[:i], at+i+1
		}
		indent := 0
		for indent < len(line) && line[indent] == ' ' {
			indent++
		}
		end := len(line)
		for end > indent && line[end-1] == ' ' {
			end--
		}
		if end > indent {
			lines = append(lines, blockLine{indent: indent, start: at, text: line[indent:end]})
		}
		at = next
	}
	if len(lines) == 0 {
		return nil, errSlowPath
	}
	return lines, nil
}

// blockText reports, in one pass, whether text (a line) holds only what
// YAML allows in a stream (its c-printable set) and no line break but
// "\n", and none of the characters the block path leaves to the general
// parser: tabs, carriage returns, and the indicators of comments,
// anchors, aliases, tags, folded scalars and directives, and the reserved
// ones (` and @). A "|" is taken: it is a literal scalar only where a
// value starts, which plainOK refuses and blockLiteral reads.
func blockText(text string) bool {
	return classText(text, &blockByte)
}

// literalText is blockText for the content of a literal block scalar,
// where every printable character but a tab is text.
func literalText(text string) bool {
	return classText(text, &literalByte)
}

func classText(doc string, class *[256]uint8) bool {
	for i := 0; i < len(doc); {
		switch class[doc[i]] {
		case blockPlain:
			i++
			continue
		case blockRefused:
			return false
		}
		r, n := utf8.DecodeRuneInString(doc[i:])
		switch {
		case r == utf8.RuneError, r < 0xa0, r >= 0xd800 && r < 0xe000, r == 0xfffe, r == 0xffff,
			r == 0x2028, r == 0x2029, r == 0xfeff: // YAML 1.1 line breaks, and a mark
			return false
		}
		i += n
	}
	return true
}

// The classes of blockByte.
const (
	blockPlain   = iota // taken as it is
	blockRefused        // errSlowPath
	blockRune           // the first byte of a multi-byte character
)

// blockByte and literalByte class each byte for blockText and
// literalText.
var (
	blockByte   = byteClasses("#&*!>`%@")
	literalByte = byteClasses("")
)

func byteClasses(indicators string) (t [256]uint8) {
	for c := range 256 {
		switch {
		case c >= utf8.RuneSelf:
			t[c] = blockRune
		case c < 0x20 && c != '\n', c == 0x7f, strings.IndexByte(indicators, byte(c)) >= 0:
			t[c] = blockRefused
		}
	}
	return t
}
