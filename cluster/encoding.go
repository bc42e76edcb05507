package cluster

import (
	"bytes"
	"errors"
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
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, errors.New("the file holds NUL bytes: UTF-16 without a byte-order mark? Save it as UTF-8")
	}
	if !utf8.Valid(data) {
		return nil, errors.New("the file is not UTF-8 text")
	}
	return data, nil
}
