//go:build tools

// Package tools pins kube-proxy v1.25, the last release with the userspace
// proxier, in this module's go.sum; hack/testcluster/build-kubeproxy125.sh
// builds it.
package tools

import _ "k8s.io/kubernetes/cmd/kube-proxy"
