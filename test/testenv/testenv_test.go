package testenv

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that records Skip and Fatal instead of ending
// the test.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                        {}
func (r *recorder) Skip(args ...any)               { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Fatalf(format string, a ...any) { r.failed = fmt.Sprintf(format, a...) }

func TestInCI(t *testing.T) {
	for v, want := range map[string]bool{
		"": false, "false": false, "0": false, "FALSE": false,
		"true": true, "1": true, "yes": true,
	} {
		t.Setenv(CIEnv, v)
		if got := InCI(); got != want {
			t.Errorf("CI=%q: InCI() = %v, want %v", v, got, want)
		}
	}
}

func TestSkipOrFail(t *testing.T) {
	for _, ci := range []string{"", "true"} {
		t.Setenv(CIEnv, ci)
		r := &recorder{TB: t}
		SkipOrFail(r, "needs a thing")
		if ci == "" && (r.skipped != "needs a thing" || r.failed != "") {
			t.Errorf("outside CI: skipped %q, failed %q; want a skip with the reason", r.skipped, r.failed)
		}
		if ci != "" && (r.skipped != "" || !strings.HasPrefix(r.failed, "needs a thing (not skipped: CI=true)")) {
			t.Errorf("under CI: skipped %q, failed %q; want a failure with the reason", r.skipped, r.failed)
		}
	}
}

func TestRequireTools(t *testing.T) {
	t.Setenv(CIEnv, "")
	r := &recorder{TB: t}
	RequireTools(r, "go", "no-such-command-testenv")
	if !strings.Contains(r.skipped, "no-such-command-testenv") {
		t.Errorf("skipped %q, want the missing command named", r.skipped)
	}
}
