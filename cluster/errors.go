package cluster

import (
	"errors"
	"fmt"
	"strings"
)

// NodeNotFoundError is a Node that does not exist, in the API (Err is the
// API error, so apierrors.IsNotFound is true for it too) or in a snapshot
// (Have lists the Nodes it holds).
type NodeNotFoundError struct {
	Name string
	Err  error
	Have []string
}

func (e *NodeNotFoundError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("node %q not found", e.Name)
	}
	return fmt.Sprintf("node %q not found in snapshot (have: %s)", e.Name, strings.Join(e.Have, ", "))
}

func (e *NodeNotFoundError) Unwrap() error { return e.Err }

// IsNodeNotFound reports whether err says the requested Node does not exist,
// from fromapi.Snapshot or from Build.
func IsNodeNotFound(err error) bool {
	var nf *NodeNotFoundError
	return errors.As(err, &nf)
}
