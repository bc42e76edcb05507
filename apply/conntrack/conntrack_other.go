//go:build !linux

package conntrack

import (
	"errors"
	"fmt"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// CleanStaleUDP fails: the conntrack table is Linux's. The commands that
// apply rules refuse to run elsewhere before they get here.
func CleanStaleUDP(t *nodetable.ServiceTable) (int, error) {
	return 0, fmt.Errorf("delete stale %s UDP conntrack entries: %w: conntrack needs Linux", t.Family, errors.ErrUnsupported)
}
