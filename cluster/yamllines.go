package cluster

import (
	"bytes"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// blockLine is one line of a block YAML document: its indentation, and
// its text without it or trailing spaces.
type blockLine struct {
	indent int
	text   string
}

// blockLines cuts doc into its lines that are not blank, after checking
// that it is printable and that no line holds what the block path leaves
// to the general parser (blockText). The lines are views of doc, not
// copies (a copy of each line was a third of converting a large List).
// They live only in convertBlock: what is kept is written into its
// output, and the only error is errSlowPath.
func blockLines(doc []byte) ([]blockLine, error) {
	if !blockText(doc) {
		return nil, errSlowPath
	}
	lines := make([]blockLine, 0, bytes.Count(doc, []byte("\n"))+1)
	text := unsafe.String(unsafe.SliceData(doc), len(doc))
	for len(text) > 0 {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
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
			lines = append(lines, blockLine{indent: indent, text: line[indent:end]})
		}
	}
	if len(lines) == 0 {
		return nil, errSlowPath
	}
	return lines, nil
}

// blockText reports, in one pass, whether doc holds only what YAML allows
// in a stream (its c-printable set) and no line break but "\n", and none
// of the characters the block path leaves to the general parser: tabs,
// carriage returns, and the indicators of comments, anchors, aliases,
// tags, block scalars and directives, and the reserved ones (` and @).
// Checking the whole document is checking every line: a blank line holds
// only spaces.
func blockText(doc []byte) bool {
	for i := 0; i < len(doc); {
		switch blockByte[doc[i]] {
		case blockPlain:
			i++
			continue
		case blockRefused:
			return false
		}
		r, n := utf8.DecodeRune(doc[i:])
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

// blockByte classes each byte for blockText.
var blockByte = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case c >= utf8.RuneSelf:
			t[c] = blockRune
		case c < 0x20 && c != '\n', c == 0x7f, strings.IndexByte("#&*!|>`%@", byte(c)) >= 0:
			t[c] = blockRefused
		}
	}
	return t
}()
