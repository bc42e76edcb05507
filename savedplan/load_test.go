package savedplan

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// A plan file over MaxSize (sparse: it takes no disk) is refused by its
// size, naming the limit, without reading it.
func TestReadTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(path, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, MaxSize+1); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = Read(f, path)
	runtime.ReadMemStats(&after)
	if want := "saved plan " + path + ": larger than 256 MiB, the limit for a saved plan"; err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("refusing a plan by its size allocated %d MiB", n>>20)
	}
}
