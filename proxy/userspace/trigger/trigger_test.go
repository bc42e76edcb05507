package trigger

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestFile checks which file changes signal: new content does, the same
// content written again does not, and a file that disappears does.
func TestFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snapshot.yaml")
	// Written atomically, as a poller can see a file half written.
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path+".tmp", []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	write("a")
	const interval = 10 * time.Millisecond
	sig := File(t.Context(), path, interval, slog.New(slog.DiscardHandler))
	expect := func(what string, want bool) {
		t.Helper()
		select {
		case <-sig:
			if !want {
				t.Fatalf("%s: signalled", what)
			}
		case <-time.After(20 * interval):
			if want {
				t.Fatalf("%s: no signal", what)
			}
		}
	}
	expect("unchanged", false)
	write("b")
	expect("new content", true)
	// The same bytes with a new modification time.
	later := time.Now().Add(time.Hour)
	write("b")
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	expect("rewritten with the same content", false)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	expect("removed", true)
	expect("still removed", false)
	write("b")
	expect("back", true)
}
