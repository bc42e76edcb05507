// Package metrics is what `apply --watch` exports on /metrics under
// kube-proxy v1.37's names: the families kube-proxy's pkg/proxy/metrics
// registers for a proxy mode (Proxy), client-go's request metrics as
// component-base's adapter names them (RESTClient), kubernetes_build_info,
// and the Go runtime and process collectors as component-base configures
// them. Names, types, label names and buckets are kube-proxy's, so that
// dashboards, alerts and ClusterLoader2's network programming latency
// read the tool as they read kube-proxy; test/conformance compares both
// processes' /metrics. docs/METRICS.md lists them.
//
// It knows no command and no loop: internal/watch observes, and this
// package declares and registers.
package metrics
