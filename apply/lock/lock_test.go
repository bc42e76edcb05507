package lock

import (
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func TestSecondRunFailsOrWaits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	first, err := Acquire(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Acquire(path, 0); !errors.Is(err, ErrHeld) {
		t.Fatalf("second Acquire: got %v, want ErrHeld", err)
	}
	start := time.Now()
	if _, err := Acquire(path, 200*time.Millisecond); !errors.Is(err, ErrHeld) {
		t.Fatalf("Acquire with wait: got %v, want ErrHeld", err)
	} else if time.Since(start) < 150*time.Millisecond {
		t.Errorf("gave up after %v, want about 200ms", time.Since(start))
	}
	go func() { time.Sleep(100 * time.Millisecond); first.Release() }()
	second, err := Acquire(path, 2*time.Second)
	if err != nil {
		t.Fatalf("waiting Acquire after release: %v", err)
	}
	second.Release()
}
