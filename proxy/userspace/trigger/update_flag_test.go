package trigger

// Accept `go test ./... -update` in every package (see internal/golden).
import _ "github.com/kubectl-svcproxy/kubectl-svcproxy/internal/golden"
