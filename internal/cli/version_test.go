package cli

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersionOutput checks version's text and its -o json and -o yaml
// Version object, with the values set at build time.
func TestVersionOutput(t *testing.T) {
	setStamp(t, buildStamp{"v1.2.3", "abc1234", "2026-01-02T03:04:05Z"})
	platform := runtime.GOOS + "/" + runtime.GOARCH

	want := "kubectl-svcproxy v1.2.3 (commit abc1234, built 2026-01-02T03:04:05Z, " + runtime.Version() + ", " + platform + ", kube-proxy compatibility v1.37)\n"
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, stderr, code := run(t, "", args...)
		if code != ExitOK || out != want {
			t.Errorf("%v: exit %d, %q (%s); want %q", args, code, out, stderr, want)
		}
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
	if _, stderr, code := run(t, "", "version", "-o", "xml"); code != ExitError || !strings.Contains(stderr, `--output "xml": must be text, json, yaml, or a template as kubectl takes it`) {
		t.Errorf("version -o xml: exit %d, %q", code, stderr)
	}
}

// setStamp makes the binary's build stamp s for the test.
func setStamp(t *testing.T, s buildStamp) {
	saved := stamp
	stamp = func() buildStamp { return s }
	t.Cleanup(func() { stamp = saved })
}

// TestStampOf: what -ldflags set wins; what it left at its defaults comes
// from the toolchain's record, as `go install ...@version` and a build in
// a git checkout leave it.
func TestStampOf(t *testing.T) {
	unset := buildStamp{"dev", "unknown", "unknown"}
	vcs := []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-12-01T10:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}
	for _, c := range []struct {
		name   string
		linked buildStamp
		info   *debug.BuildInfo
		want   buildStamp
	}{
		{"no build info", unset, nil, unset},
		{"go install @version", unset, &debug.BuildInfo{Main: debug.Module{Version: "v0.4.0"}},
			buildStamp{"v0.4.0", "unknown", "unknown"}},
		{"go build in a modified checkout", unset, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			buildStamp{"dev", "0123456789abcdef0123456789abcdef01234567-dirty", "2026-12-01T10:00:00Z"}},
		{"release build", buildStamp{"v1.2.3", "abc1234", "2026-01-02T03:04:05Z"},
			&debug.BuildInfo{Main: debug.Module{Version: "v9.9.9"}, Settings: vcs},
			buildStamp{"v1.2.3", "abc1234", "2026-01-02T03:04:05Z"}},
	} {
		if got := stampOf(c.linked, c.info); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
