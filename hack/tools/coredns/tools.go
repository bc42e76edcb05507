//go:build tools

// Package tools pins CoreDNS, the cluster DNS that kubeadm v1.37 deploys
// (its constants.CoreDNSVersion), in this module's go.sum, apart from the
// hack/tools module so that CoreDNS's dependencies do not move
// Kubernetes'; `hack/testcluster/build.sh coredns` builds it for the
// kubelet lab's cluster DNS (test/clusterdns).
package tools

import (
	_ "github.com/coredns/coredns"
)
