package inputlimit

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// zeros is an endless input, as /dev/zero is; n counts what was read.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	clear(p)
	z.n += int64(len(p))
	return len(p), nil
}

// allocated is how many bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// An input of exactly the limit is read; one byte more is a
// *TooLargeError that names the limit.
func TestReadAllLimit(t *testing.T) {
	const limit = 3<<20 + 5
	data := bytes.Repeat([]byte("x"), limit)
	got, err := ReadAll(bytes.NewReader(data), limit, "a test file")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("at the limit: %d bytes, %v; want all %d", len(got), err, limit)
	}
	_, err = ReadAll(bytes.NewReader(append(data, 'y')), limit, "a test file")
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Limit != limit {
		t.Fatalf("over the limit: %v, want a *TooLargeError", err)
	}
	if want := "larger than 3145733 bytes, the limit for a test file"; err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
}

// An endless input stops at the limit, and costs about the limit in
// memory, not the several times that regrowing a buffer costs.
func TestReadAllEndless(t *testing.T) {
	const limit = 32 << 20
	z := &zeros{}
	var err error
	n := allocated(func() { _, err = ReadAll(z, limit, "a snapshot") })
	if _, ok := err.(*TooLargeError); !ok {
		t.Fatalf("got %v, want a *TooLargeError", err)
	}
	if z.n > limit+maxChunk {
		t.Errorf("read %d bytes of an endless input with a limit of %d", z.n, limit)
	}
	if n > limit+limit/4 {
		t.Errorf("allocated %d MiB reading to a limit of %d MiB", n>>20, limit>>20)
	}
}

// A regular file over the limit is refused; so is a device read past it.
func TestReadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadFile(path, 5, "x"); err != nil || string(got) != "12345" {
		t.Fatalf("at the limit: %q, %v", got, err)
	}
	if _, err := ReadFile(path, 4, "x"); !errors.As(err, new(*TooLargeError)) {
		t.Fatalf("over the limit: %v, want a *TooLargeError", err)
	}
	if _, err := ReadFile("/dev/zero", 1<<20, "x"); err == nil || err.Error() != "larger than 1 MiB, the limit for x" {
		t.Fatalf("/dev/zero: %v, want the limit", err)
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "none"), 5, "x"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{1 << 30: "1 GiB", 256 << 20: "256 MiB", 4 << 10: "4 KiB", 4097: "4097 bytes", 3 << 29: "1536 MiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

// io.Reader is all ReadAll needs: a reader that fails passes its error on.
func TestReadAllError(t *testing.T) {
	want := errors.New("boom")
	if _, err := ReadAll(io.MultiReader(strings.NewReader("ab"), iotestErr{want}), 10, "x"); !errors.Is(err, want) {
		t.Fatalf("got %v, want %v", err, want)
	}
}

type iotestErr struct{ err error }

func (e iotestErr) Read([]byte) (int, error) { return 0, e.err }
