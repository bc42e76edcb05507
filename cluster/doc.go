// Package cluster owns the cluster's state as kubectl-svcproxy sees it: the
// Snapshot of Services, EndpointSlices, Nodes and ServiceCIDRs (loaded from a
// file or from the API server), and the node-local ServiceTable built from it
// with kube-proxy v1.37's semantics (which Services are proxied, which
// endpoints serve which traffic policy). It knows nothing of rulesets.
package cluster
