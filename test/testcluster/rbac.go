package testcluster

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/repo"
)

// StartWithRBAC starts the test API server with the shipped RBAC
// (deploy/base/rbac.yaml, as deploy/base/daemonset.yaml runs with it: the
// kubectl-svcproxy ServiceAccount, ClusterRole and ClusterRoleBinding)
// and TestRBAC applied, so that the tool can run as the svcproxy user with
// exactly the deployed permissions (UserKubeconfig), and as a user that
// may read Nodes and nothing else (OtherKubeconfig).
func StartWithRBAC(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	c := Start(t, opts...)
	c.Apply(t, string(ShippedRBAC(t)))
	c.Apply(t, TestRBAC)
	return c
}

// ShippedRBAC is deploy/base/rbac.yaml as shipped.
func ShippedRBAC(t testing.TB) []byte {
	t.Helper()
	rbac, err := os.ReadFile(filepath.Join(repo.MustRoot(t), "deploy", "base", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return rbac
}

// TestRBAC binds the shipped ClusterRole to the svcproxy user the tests
// authenticate as, and gives the other user a role that may read Nodes but
// nothing else.
const TestRBAC = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: kubectl-svcproxy-test-user}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: kubectl-svcproxy}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: svcproxy}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: node-reader}
rules:
- {apiGroups: [""], resources: [nodes], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: other-node-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: node-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: other}
`
