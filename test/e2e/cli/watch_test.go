package cli

import (
	"testing"
)

// startWatch starts `apply --watch` in the node namespace with the e2e
// node's backend, lock and state directory, kubeconfig and args; the
// test's end stops it.
func startWatch(t *testing.T, n *e2eNode, kubeconfig string, args ...string) *bgProc {
	t.Helper()
	return n.startBackground(t, "apply --watch", nil, "apply", append([]string{"--watch", "--kubeconfig=" + kubeconfig}, args...)...)
}
