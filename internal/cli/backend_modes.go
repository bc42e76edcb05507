package cli

import (
	"context"
	"fmt"
)

// otherBackend returns the backends of the modes that do not write through
// iptables-restore alone.
func (c *common) otherBackend(_ context.Context, _ *kernelFlags, mode Mode) (kernelBackend, error) {
	return nil, fmt.Errorf("--mode %s: plan, apply and reset are not implemented yet for this mode", mode)
}
