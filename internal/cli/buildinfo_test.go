package cli

import (
	"runtime"
	"testing"
)

// kubernetes_build_info's labels from the stamp: major and minor only from
// a vX.Y.Z version, the tree state from the commit's -dirty, none when
// the commit is unknown.
func TestBuildInfoOf(t *testing.T) {
	for _, c := range []struct {
		s                                 buildStamp
		major, minor, commit, tree, build string
	}{
		{buildStamp{"v1.4.2", "abc", "2026-12-01"}, "1", "4", "abc", "clean", "2026-12-01"},
		{buildStamp{"v1.4.2-rc.1", "abc-dirty", "d"}, "1", "4", "abc", "dirty", "d"},
		{buildStamp{"dev", "unknown", "unknown"}, "", "", "unknown", "", "unknown"},
	} {
		b := buildInfoOf(c.s)
		if b.Major != c.major || b.Minor != c.minor || b.GitCommit != c.commit || b.GitTreeState != c.tree ||
			b.BuildDate != c.build || b.GitVersion != c.s.version || b.GoVersion != runtime.Version() || b.Platform != runtime.GOOS+"/"+runtime.GOARCH {
			t.Errorf("%+v: %+v", c.s, b)
		}
	}
}
