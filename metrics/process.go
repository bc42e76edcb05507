package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Runtime returns the process and Go collectors as component-base's
// legacy registry sets them up for kube-proxy: every runtime/metrics
// family, besides the classic go_memstats_* ones.
func Runtime() []prometheus.Collector {
	return []prometheus.Collector{
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsAll)),
	}
}

// Build is what kubernetes_build_info says of the binary: the tool's own
// version, commit and build date, not a Kubernetes release's.
type Build struct {
	Major, Minor, GitVersion, GitCommit, GitTreeState, BuildDate, GoVersion, Compiler, Platform string
}

// BuildInfo is kubernetes_build_info (component-base's
// metrics/prometheus/version): a constant 1, labelled with b.
func BuildInfo(b Build) prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kubernetes_build_info",
		Help: "A metric with a constant '1' value labeled by major, minor, git version, git commit, git tree state, build date, Go version, and compiler from which Kubernetes was built, and platform on which it is running.",
	}, []string{"major", "minor", "git_version", "git_commit", "git_tree_state", "build_date", "go_version", "compiler", "platform"})
	g.WithLabelValues(b.Major, b.Minor, b.GitVersion, b.GitCommit, b.GitTreeState, b.BuildDate, b.GoVersion, b.Compiler, b.Platform).Set(1)
	return g
}
