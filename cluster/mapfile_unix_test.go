//go:build unix

package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A snapshot file is mapped, not read; decoding it gives what decoding its
// bytes gives.
func TestLoadFileMapped(t *testing.T) {
	path, f := openTestFile(t, kubectlList)
	if _, unmap, err := mapFile(f); err != nil || unmap == nil {
		t.Fatalf("mapFile: unmap %v, %v; want a mapping", unmap != nil, err)
	} else {
		unmap()
	}
	got, err := LoadFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := mustDecode(t, kubectlList)
	if len(got.Services) == 0 || len(got.Services) != len(want.Services) || len(got.EndpointSlices) != len(want.EndpointSlices) {
		t.Fatalf("mapped: %d Services, %d slices; read: %d, %d", len(got.Services), len(got.EndpointSlices), len(want.Services), len(want.EndpointSlices))
	}
}

// A mapped file that shrinks while it is decoded (rewritten with ">") is
// an error that says so, not a crash.
func TestLoadFileShrunkWhileRead(t *testing.T) {
	path, f := openTestFile(t, kubectlList+strings.Repeat(" ", 3*os.Getpagesize()))
	data, unmap, err := mapFile(f)
	if err != nil || unmap == nil {
		t.Fatalf("mapFile: %v", err)
	}
	defer unmap()
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	_, err = decodeMapped(path, data, reading{})
	var de *DecodeError
	if !errors.As(err, &de) || !errors.Is(err, errChangedWhileRead) {
		t.Fatalf("got %v, want %v", err, errChangedWhileRead)
	}
}

// A mapped file that shrinks inside its second chunk is an error too:
// the cut between the chunks still reads, and the text check of the
// second chunk, on a goroutine of its own, faults.
func TestLoadFileShrunkInSecondChunk(t *testing.T) {
	page := os.Getpagesize()
	path, f := openTestFile(t, kubectlList+strings.Repeat(" ", textChunk+64*page))
	data, unmap, err := mapFile(f)
	if err != nil || unmap == nil {
		t.Fatalf("mapFile: %v", err)
	}
	defer unmap()
	if err := os.Truncate(path, int64(textChunk+16*page)); err != nil {
		t.Fatal(err)
	}
	if _, err = decodeMapped(path, data, reading{}); !errors.Is(err, errChangedWhileRead) {
		t.Fatalf("got %v, want %v", err, errChangedWhileRead)
	}
}

// openTestFile writes content to a file of its own and opens it; the file
// is closed when the test ends.
func openTestFile(t *testing.T, content string) (string, *os.File) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "snap.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return path, f
}
