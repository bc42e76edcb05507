// Package upstream runs Kubernetes' own end-to-end tests of Services
// (e2e.test of k8s.io/kubernetes v1.37.2, hack/tools/e2e) on the kubelet
// lab, once with the real kube-proxy v1.37.2 as a DaemonSet and once with
// kubectl-svcproxy in each mode, and keeps the results side by side in
// docs/CONFORMANCE.md. hack/e2e-upstream.sh MODE runs one column.
//
// This file is the selection: what runs, what is skipped and why.
package upstream

import (
	"regexp"
	"strings"
)

// Focus is ginkgo's --focus: the Service, conntrack and kube-proxy tests of
// sig-network, and every sig-network test of the conformance suite.
const Focus = `\[sig-network\] (Services|Conntrack|KubeProxy)|\[sig-network\].*\[Conformance\]`

// Subset is the focus of CI's bounded run: a few of the Service
// conformance tests that send traffic through a ClusterIP and a NodePort,
// with and without session affinity, two to three minutes in all.
const Subset = `\[sig-network\] Services should (serve a basic endpoint from pods|be able to create a functioning NodePort service|have session affinity work for service with type clusterIP|serve endpoints on same port and different protocols) `

// Skip is one entry of the skip list: a regular expression over the
// test's full name, and why the lab does not run it.
type Skip struct {
	Pattern string
	Reason  string
}

// Skips is the skip list, the same for every column. Tests that skip
// themselves (too few nodes, a provider the lab is not) are not listed:
// the results name their own reason.
var Skips = []Skip{
	{`\[Disruptive\]`, "restarts kube-proxy or kube-apiserver by deleting their pods, " +
		"found by kube-proxy's and kube-apiserver's own labels (the lab's API server is no pod), " +
		"and must run alone while the run is parallel"},
	{`\[Serial\]`, "must run alone, and the run is parallel; the one selected (SCTP) also " +
		"loads the sctp kernel module, which a test may not do to this machine's shared kernel"},
	{`on Type LoadBalancer`, "needs a cloud provider's load balancer"},
}

// SkipRegexp is ginkgo's --skip for Skips.
func SkipRegexp() string {
	parts := make([]string, len(Skips))
	for i, s := range Skips {
		parts[i] = s.Pattern
	}
	return strings.Join(parts, "|")
}

// skipReason returns the reason of the first entry of Skips that matches
// name, or "".
func skipReason(name string) string {
	for _, s := range Skips {
		if regexp.MustCompile(s.Pattern).MatchString(name) {
			return s.Reason
		}
	}
	return ""
}
