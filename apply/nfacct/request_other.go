//go:build !linux

package nfacct

import (
	"errors"
	"fmt"
)

// request fails: nfnetlink_acct is Linux's. The commands that count with
// nfacct refuse to run elsewhere before they get here.
func request(int, int, string) ([][]byte, error) {
	return nil, fmt.Errorf("%w: nfnetlink_acct needs Linux", errors.ErrUnsupported)
}
