// Package conformance checks kubectl-svcproxy against the real kube-proxy
// v1.37.2, side by side, on the same inputs.
//
// For every golden scenario (testdata/golden/*.txtar) the runner loads the
// scenario's objects into a real kube-apiserver (test/testcluster),
// runs the real kube-proxy as the scenario's node in a throwaway network
// namespace (test/netlab) in iptables and in nftables mode until its
// rules are programmed and stable, renders the same objects with the tool
// and loads them into a second namespace, and compares the two kernel
// dumps in a canonical form (see Canonical). It then runs `kubectl
// svcproxy plan` on kube-proxy's namespace, which must find nothing to
// change. Differences fail the test unless testdata/conformance/allowlist.yaml
// explains them. The same machinery times kube-proxy's first sync against
// `kubectl svcproxy apply` from empty at 1k and 10k Services, and
// (BenchmarkWatchLatency) runs both side by side against the same changes
// to compare `apply --watch`'s network programming latency, CPU and
// memory with kube-proxy's.
//
// docs/CONFORMANCE.md describes what is compared and how to run it.
package conformance
