// Package inputlimit bounds what an input file may cost: how many bytes
// are read, and how far a YAML document's aliases may expand it. A file
// is input the tool does not control (a snapshot, a --config from a
// ConfigMap): without these bounds, /dev/zero or an alias bomb runs the
// process out of memory, which Go cannot recover from.
package inputlimit

import (
	"fmt"
	"io"
	"os"
)

// TooLargeError is an input larger than its limit.
type TooLargeError struct {
	// What the limit is for ("a snapshot file").
	What  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("larger than %s, the limit for %s", Size(e.Limit), e.What)
}

// Size spells a limit in the largest binary unit that divides it: "1 GiB",
// "256 MiB", "4096 bytes".
func Size(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// firstChunk and maxChunk size the pieces ReadAll reads into.
const (
	firstChunk = 64 << 10
	maxChunk   = 16 << 20
)

// ReadAll reads r to its end, or fails with a *TooLargeError as soon as
// it has read more than limit bytes: /dev/zero costs limit bytes, not all
// the memory there is. It reads into pieces and joins them once, so that
// the memory it takes is about the input's size, where io.ReadAll's
// regrowing takes several times that.
func ReadAll(r io.Reader, limit int64, what string) ([]byte, error) {
	var chunks [][]byte
	var total int64
	size := int64(firstChunk)
	for {
		// One byte past the limit tells a file of exactly limit bytes
		// from a longer one.
		n := min(size, limit+1-total)
		buf := make([]byte, n)
		got, err := io.ReadFull(r, buf)
		total += int64(got)
		if got > 0 {
			chunks = append(chunks, buf[:got])
		}
		if total > limit {
			return nil, &TooLargeError{What: what, Limit: limit}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, err
		}
		size = min(2*size, maxChunk)
	}
	if len(chunks) == 1 {
		return chunks[0], nil
	}
	data := make([]byte, 0, total)
	for _, c := range chunks {
		data = append(data, c...)
	}
	return data, nil
}

// ReadFile reads the file at path, bounded as ReadAll is. A regular file
// whose size is over the limit is refused without reading it; any other
// file (a pipe, a device such as /dev/zero) is read until the limit.
func ReadFile(path string, limit int64, what string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > limit {
		return nil, &TooLargeError{What: what, Limit: limit}
	}
	return ReadAll(f, limit, what)
}
