package cluster

import (
	"fmt"
	"strings"
	"testing"
)

// A panic in one of forEach's goroutines is raised again on the caller's,
// naming where it happened, so that the command's recover can report it;
// on its own goroutine it would end the process with a trace.
func TestForEachPanic(t *testing.T) {
	defer func() {
		r := recover()
		p, ok := r.(*workerPanic)
		if !ok {
			t.Fatalf("recovered %v (%T), want a *workerPanic", r, r)
		}
		if msg := fmt.Sprint(p); !strings.HasPrefix(msg, "boom at ") || !strings.Contains(msg, "parallel_test.go:") {
			t.Errorf("panic %q, want the value and its place", msg)
		}
	}()
	forEachOn(2, 100, func(i int) {
		if i == 50 {
			panic("boom")
		}
	})
	t.Fatal("forEachOn returned")
}
