package cli

import (
	"runtime"
	"strings"
	"testing"
)

// TestVersionOutput checks version's text and its -o json and -o yaml
// Version object, with the values set at build time.
func TestVersionOutput(t *testing.T) {
	saved := [3]string{version, commit, date}
	version, commit, date = "v1.2.3", "abc1234", "2026-01-02T03:04:05Z"
	t.Cleanup(func() { version, commit, date = saved[0], saved[1], saved[2] })
	platform := runtime.GOOS + "/" + runtime.GOARCH

	out, stderr, code := run(t, "", "version")
	want := "kubectl-svcproxy v1.2.3 (commit abc1234, built 2026-01-02T03:04:05Z, " + runtime.Version() + ", " + platform + ", kube-proxy compatibility v1.37)\n"
	if code != ExitOK || out != want {
		t.Errorf("version: exit %d, %q (%s); want %q", code, out, stderr, want)
	}
	for _, format := range []string{"json", "yaml"} {
		out, stderr, code := run(t, "", "version", "-o", format)
		if code != ExitOK {
			t.Fatalf("version -o %s: exit %d: %s", format, code, stderr)
		}
		v := decodeOutput(t, format, out)
		checkObject(t, "version -o "+format, v, kindVersion)
		for field, want := range map[string]string{
			"version": "v1.2.3", "commit": "abc1234", "buildDate": "2026-01-02T03:04:05Z",
			"goVersion": runtime.Version(), "platform": platform, "kubeProxyCompatibility": "v1.37",
		} {
			if v[field] != want {
				t.Errorf("version -o %s: %s is %v, want %q", format, field, v[field], want)
			}
		}
		if len(v) != 8 {
			t.Errorf("version -o %s: %d fields, want 8: %v", format, len(v), v)
		}
	}
	if _, stderr, code := run(t, "", "version", "-o", "xml"); code != ExitError || !strings.Contains(stderr, `--output "xml": must be text, json or yaml`) {
		t.Errorf("version -o xml: exit %d, %q", code, stderr)
	}
}
