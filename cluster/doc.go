// Package cluster owns the cluster's state as kubectl-svcproxy sees it: the
// Snapshot of Services, EndpointSlices, Nodes and ServiceCIDRs, read from a
// file (Decode, LoadFile) or, through cluster/fromapi, from the API server;
// and Build, which turns it into the node-local nodetable.ServiceTable with
// kube-proxy v1.37's semantics (which Services are proxied, which endpoints
// serve which traffic policy). It knows nothing of rulesets, and it does
// not import the Kubernetes client libraries: only the API types.
package cluster
