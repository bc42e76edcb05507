//go:build tools

// Package tools pins containerd v2 (the container runtime of the kubelet
// end-to-end test, test/kubeletlab) in this module's go.sum, apart from
// the hack/tools module so that its dependencies do not move Kubernetes';
// `hack/testcluster/build.sh containerd` builds it.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
