package statefile

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// OpenOwnFile opens the regular file at path for reading if no one but
// the running user (and root) can have written it or can replace it: it
// gets the test of the tool's own files (OpenFile: not a symbolic link,
// owned by the running user, not writable by group or others, one link),
// and its directory and every one above get the test of the directories
// above the tool's own (owned by root or the user, not writable by others
// unless sticky), so a file in /tmp passes and one in another user's
// directory does not. Nothing is created. A file that fails is refused
// with an *UnsafeError naming it and the reason.
//
// It is for input that decides what is written to the kernel, such as a
// saved plan: what the tool reads must be what its user reviewed.
func OpenOwnFile(path string) (*os.File, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	parent, name := filepath.Split(abs)
	if name == "" {
		return nil, &UnsafeError{Path: abs, Reason: "it is not a regular file"}
	}
	w, err := walk(&walker{fd: -1, existing: true}, parent)
	if err != nil {
		return nil, err
	}
	defer unix.Close(w.fd)
	d := Dir{fd: w.fd, path: w.path}
	return d.open(name, unix.O_RDONLY)
}
