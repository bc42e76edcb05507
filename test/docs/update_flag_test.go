package docs

// Accept `go test ./... -update` in every package (see test/golden).
import _ "github.com/kubectl-svcproxy/kubectl-svcproxy/test/golden"
