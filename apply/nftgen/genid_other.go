//go:build !linux

package nftgen

import (
	"errors"
	"fmt"
)

// errNeedsLinux: nf_tables and network namespace cookies are Linux's.
var errNeedsLinux = fmt.Errorf("%w: nf_tables needs Linux", errors.ErrUnsupported)

// Read fails: there is no nf_tables here.
func Read() (uint32, error) { return 0, errNeedsLinux }

// NetnsCookie fails: there are no network namespaces here.
func NetnsCookie() (uint64, error) { return 0, errNeedsLinux }
