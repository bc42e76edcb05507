package panicsite

import (
	"strings"
	"testing"
)

// TestOfNamesThePanickingFunction: the site is the function that
// panicked (an index out of range here), not the runtime or the recover.
func TestOfNamesThePanickingFunction(t *testing.T) {
	var site string
	func() {
		defer func() {
			recover()
			site = Of()
		}()
		outOfRange(nil)
	}()
	if !strings.HasPrefix(site, " at github.com/kubectl-svcproxy/kubectl-svcproxy/internal/panicsite.outOfRange (panicsite_test.go:") {
		t.Errorf("site %q, want outOfRange's line", site)
	}
	if s := Of(); s != "" {
		t.Errorf("no panic under way: %q", s)
	}
}

func outOfRange(s []int) int { return s[3] }
