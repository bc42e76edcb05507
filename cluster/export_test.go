package cluster

// Exported for the tests of package cluster_test, which build their
// snapshots with test/synthetic (which imports this package).
var (
	FastYAMLToJSON  = fastJSON
	BlockYAMLToJSON = blockJSON
	KubectlList     = kubectlList
)

// blockJSON, fastJSON and yamlJSON are the converters without the
// members they return for the decoder.
func blockJSON(doc []byte) ([]byte, error) {
	out, _, err := blockYAMLToJSON(doc)
	return out, err
}

func fastJSON(doc []byte) ([]byte, error) {
	out, _, err := fastYAMLToJSON(doc)
	return out, err
}

func yamlJSON(doc []byte, startLine int) ([]byte, error) {
	out, _, err := yamlToJSON(doc, startLine)
	return out, err
}
