//go:build !linux

package statefile

import (
	"errors"
	"fmt"
	"os"
)

// errNeedsLinux: the checks above rely on Linux's O_PATH and *at calls,
// and the files kept here describe Linux's kernel state.
var errNeedsLinux = fmt.Errorf("%w: the state directory needs Linux", errors.ErrUnsupported)

// Dir cannot be opened here; its methods fail.
type Dir struct{ path string }

// Path is the directory's path.
func (d *Dir) Path() string { return d.path }

// Close does nothing.
func (d *Dir) Close() error { return nil }

// OpenDir fails: see errNeedsLinux.
func OpenDir(path string) (*Dir, error) {
	return nil, &os.PathError{Op: "open", Path: path, Err: errNeedsLinux}
}

// Sub fails.
func (d *Dir) Sub(string) (*Dir, error) { return nil, errNeedsLinux }

// OpenFile fails.
func (d *Dir) OpenFile(string) (*os.File, error) { return nil, errNeedsLinux }

// ReadFile fails.
func (d *Dir) ReadFile(string) ([]byte, error) { return nil, errNeedsLinux }

// WriteFile fails.
func (d *Dir) WriteFile(string, []byte) error { return errNeedsLinux }

func (d *Dir) writeFile(string, ...[]byte) error { return errNeedsLinux }

// Remove fails.
func (d *Dir) Remove(string) error { return errNeedsLinux }

// OpenOwnFile fails.
func OpenOwnFile(path string) (*os.File, error) {
	return nil, &os.PathError{Op: "open", Path: path, Err: errNeedsLinux}
}
