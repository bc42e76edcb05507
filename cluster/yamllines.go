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
// to the general parser. The lines are views of doc, not copies (a copy
// of each line was a third of converting a large List). They live only
// in convertBlock: what is kept is written into its output, and the only
// error is errSlowPath.
func blockLines(doc []byte) ([]blockLine, error) {
	if !printable(doc) {
		return nil, errSlowPath
	}
	lines := make([]blockLine, 0, bytes.Count(doc, []byte("\n"))+1)
	text := unsafe.String(unsafe.SliceData(doc), len(doc))
	for l := range strings.Lines(text) {
		s := strings.TrimSuffix(l, "\n")
		if strings.TrimLeft(s, " ") == "" {
			continue
		}
		if strings.ContainsAny(s, "\t\r#&*!|>`%@") {
			return nil, errSlowPath
		}
		lines = append(lines, blockLine{indent: len(s) - len(strings.TrimLeft(s, " ")), text: strings.TrimRight(strings.TrimLeft(s, " "), " ")})
	}
	if len(lines) == 0 {
		return nil, errSlowPath
	}
	return lines, nil
}

// printable reports whether doc holds only what YAML allows in a stream
// (its c-printable set) besides tabs and carriage returns, and no line
// break but "\n": the block path leaves the rest to the general parser.
func printable(doc []byte) bool {
	for i := 0; i < len(doc); {
		c := doc[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 && c != '\n') || c == 0x7f {
				return false
			}
			i++
			continue
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
