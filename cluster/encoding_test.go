package cluster

import (
	"bytes"
	"testing"
	"unicode/utf8"
)

// TestCheckTextInChunks: a file large enough to be checked in chunks gets
// the answers of one pass over all of it, whatever sits where a chunk
// would be cut: a character of up to four bytes across the cut, a broken
// one, a stray continuation byte, a NUL.
func TestCheckTextInChunks(t *testing.T) {
	base := bytes.Repeat([]byte("a"), 2*textChunk+textChunk/2)
	for _, bad := range []string{"\U0001F600", "é", "\xF0\x9F\x98", "\x80", "\x80\x80\x80\x80\x80", "\x00", "\xE2\x82"} {
		for _, at := range []int{textChunk - 4, textChunk - 2, textChunk - 1, textChunk, textChunk + 1, 2*textChunk - 1, len(base) - len(bad)} {
			data := bytes.Clone(base)
			copy(data[at:], bad)
			var want error
			switch {
			case bytes.IndexByte(data, 0) >= 0:
				want = errNUL
			case !utf8.Valid(data):
				want = errNotUTF8
			}
			if err := checkText(data); err != want {
				t.Errorf("%q at %d: %v, want %v", bad, at, err, want)
			}
		}
	}
}
