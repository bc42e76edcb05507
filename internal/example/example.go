// Package example is product code: the binary embeds its snapshot, which
// `--example` renders and the README's first command applies.
package example

import _ "embed"

// Snapshot is a small cluster, as `kubectl get nodes,services,endpointslices -A -o yaml` prints it.
//
//go:embed snapshot.yaml
var Snapshot []byte

// NodeName is the node of the example that the rules are rendered for.
const NodeName = "node1"
