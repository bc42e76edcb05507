//go:build !linux

package ipvs

import (
	"errors"
	"fmt"
)

// ErrNoIPVS says the kernel has no IPVS: here, none at all.
var ErrNoIPVS = fmt.Errorf("%w: IPVS needs Linux", errors.ErrUnsupported)

// NetlinkKernel cannot be opened here. It embeds the interface only so
// that the package's callers build; OpenKernel never returns one.
type NetlinkKernel struct{ Kernel }

// OpenKernel fails: IPVS, ipsets and kube-ipvs0 are Linux's.
func OpenKernel(string) (*NetlinkKernel, error) { return nil, ErrNoIPVS }

// Close does nothing.
func (k *NetlinkKernel) Close() {}

// kernelVersion is unknown here.
func kernelVersion() (major, minor int) { return 0, 0 }
