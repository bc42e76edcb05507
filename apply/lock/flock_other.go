//go:build !linux

package lock

import (
	"errors"
	"fmt"
	"os"
)

// tryLock fails: the lock guards Linux's kernel rules, and its file is
// opened through statefile, which needs Linux too.
func tryLock(*os.File) (bool, error) {
	return false, fmt.Errorf("%w: the run lock needs Linux", errors.ErrUnsupported)
}
