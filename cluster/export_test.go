package cluster

// Exported for the tests of package cluster_test, which build their
// snapshots with internal/synthetic (which imports this package).
var (
	FastYAMLToJSON  = fastYAMLToJSON
	BlockYAMLToJSON = blockYAMLToJSON
	KubectlList     = kubectlList
)
