package cli

import (
	"runtime"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/metrics"
)

// buildStamp is what a build says of itself: the version, commit and date
// set with -ldflags by the release and image builds, or else what the Go
// toolchain recorded. `go install ...@v1.2.3` records the module version;
// a build inside a git checkout records the commit, its time and whether
// the tree was modified.
type buildStamp struct {
	version, commit, date string
}

// stamp is the stamp of this binary, read once.
var stamp = sync.OnceValue(func() buildStamp {
	info, _ := debug.ReadBuildInfo()
	return stampOf(buildStamp{version, commit, date}, info)
})

// stampOf fills in from info what the linker flags left at their
// defaults ("dev", "unknown"); values set with -ldflags win.
func stampOf(linked buildStamp, info *debug.BuildInfo) buildStamp {
	s := linked
	if info == nil {
		return s
	}
	if s.version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		s.version = info.Main.Version
	}
	var revision, modified, vcsTime string
	for _, kv := range info.Settings {
		switch kv.Key {
		case "vcs.revision":
			revision = kv.Value
		case "vcs.modified":
			modified = kv.Value
		case "vcs.time":
			vcsTime = kv.Value
		}
	}
	if s.commit == "unknown" && revision != "" {
		s.commit = revision
		if modified == "true" {
			s.commit += "-dirty"
		}
	}
	if s.date == "unknown" && vcsTime != "" {
		s.date = vcsTime
	}
	return s
}

// buildInfo is the stamp as kubernetes_build_info labels it: the tool's
// own version (major and minor from a vX.Y.Z version, empty otherwise),
// commit, tree state and date, and the Go toolchain and platform.
func buildInfo() metrics.Build { return buildInfoOf(stamp()) }

func buildInfoOf(s buildStamp) metrics.Build {
	b := metrics.Build{GitVersion: s.version, GitCommit: strings.TrimSuffix(s.commit, "-dirty"), BuildDate: s.date,
		GoVersion: runtime.Version(), Compiler: runtime.Compiler, Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if s.commit != "unknown" {
		b.GitTreeState = "clean"
		if strings.HasSuffix(s.commit, "-dirty") {
			b.GitTreeState = "dirty"
		}
	}
	if parts := strings.SplitN(strings.TrimPrefix(s.version, "v"), ".", 3); len(parts) == 3 && strings.HasPrefix(s.version, "v") {
		b.Major, b.Minor = parts[0], parts[1]
	}
	return b
}
