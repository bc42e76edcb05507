package cluster

import (
	"bytes"
	"errors"
	"sync/atomic"
	"unicode/utf8"

	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// utf8Text returns a snapshot file's text as UTF-8. Like kubectl, it
// honours a byte-order mark: UTF-16 in either byte order (what Windows
// PowerShell 5's ">" writes) is decoded and a UTF-8 mark is dropped.
// Without a mark the text must be UTF-8: a file with NUL bytes (UTF-16
// without a mark) or invalid UTF-8 is refused rather than half read, so
// that it can never turn into an empty snapshot.
func utf8Text(data []byte) ([]byte, error) {
	switch {
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}), bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		// BOMOverride picks the byte order from the mark and drops it.
		out, _, err := transform.Bytes(unicode.BOMOverride(unicode.UTF8.NewDecoder()), data)
		if err != nil {
			return nil, errors.New("cannot decode the UTF-16 text: " + err.Error())
		}
		return out, nil
	case bytes.HasPrefix(data, []byte{0xEF, 0xBB, 0xBF}):
		data = data[3:]
	}
	if err := checkText(data); err != nil {
		return nil, err
	}
	return data, nil
}

var (
	errNUL     = errors.New("the file holds NUL bytes: UTF-16 without a byte-order mark? Save it as UTF-8")
	errNotUTF8 = errors.New("the file is not UTF-8 text")
)

// textChunk is the size above which checkText checks a file in chunks,
// on every CPU: the check is a pass over all of the file before anything
// else can start (30 to 45 ms on a 10k snapshot's 74 MB).
const textChunk = 4 << 20

// checkText refuses text that holds a NUL byte or is not UTF-8. Chunks
// are cut where a character starts, so that no character spans two: the
// text is valid when every chunk is. The text may be a mapped file: a
// fault while reading it (the file shrank) is errChangedWhileRead, not a
// crash (see mapfile.go).
func checkText(data []byte) error {
	var chunks [][]byte
	for len(data) > textChunk {
		cut := textChunk
		for n := 0; n < utf8.UTFMax && cut < len(data) && !utf8.RuneStart(data[cut]); n++ {
			cut++
		}
		chunks, data = append(chunks, data[:cut]), data[cut:]
	}
	chunks = append(chunks, data)
	var nul, invalid, faulted atomic.Bool
	forEachChunk(len(chunks), func(i int) {
		defer guardFault(func(error) { faulted.Store(true) })()
		if bytes.IndexByte(chunks[i], 0) >= 0 {
			nul.Store(true)
		}
		if !utf8.Valid(chunks[i]) {
			invalid.Store(true)
		}
	})
	switch {
	case faulted.Load():
		return errChangedWhileRead
	case nul.Load():
		return errNUL
	case invalid.Load():
		return errNotUTF8
	}
	return nil
}
