package statefile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Dir is an open directory that passed the checks. Its methods work
// relative to the open descriptor, never through the path again.
type Dir struct {
	fd   int
	path string
}

// Path is the directory's path, with the symbolic links above it resolved.
func (d *Dir) Path() string { return d.path }

// Close releases the directory's descriptor.
func (d *Dir) Close() error {
	if d == nil || d.fd < 0 {
		return nil
	}
	err := unix.Close(d.fd)
	d.fd = -1
	return err
}

// OpenDir opens the directory at path as the tool's own, creating it and
// any missing parent with mode 0700, and checks it and every directory
// above it (see the package comment).
func OpenDir(path string) (*Dir, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	parent, name := filepath.Split(abs)
	if name == "" {
		return nil, &UnsafeError{Path: abs, Reason: "the root directory cannot hold the tool's state"}
	}
	w, err := walkAncestors(parent)
	if err != nil {
		return nil, err
	}
	defer unix.Close(w.fd)
	return openOwnDir(w.fd, filepath.Join(w.path, name), name)
}

// Sub opens the directory name in d, creating it with mode 0700, with the
// checks of the directory itself.
func (d *Dir) Sub(name string) (*Dir, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	return openOwnDir(d.fd, filepath.Join(d.path, name), name)
}

// openOwnDir opens (creating it if missing) the directory name in the
// directory parent as one of the tool's own.
func openOwnDir(parent int, path, name string) (*Dir, error) {
	if err := unix.Mkdirat(parent, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return nil, &os.PathError{Op: "mkdir", Path: path, Err: err}
	}
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, openError(parent, path, name, unix.S_IFDIR, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if err := checkOwn(path, &st, unix.S_IFDIR); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &Dir{fd: fd, path: path}, nil
}

// openError explains a failed open with O_NOFOLLOW of what should be a
// file of the given kind: a symbolic link, or a file of another kind.
func openError(parent int, path, name string, kind uint32, err error) error {
	var st unix.Stat_t
	switch {
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.EISDIR), errors.Is(err, unix.ENXIO):
		if unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return &UnsafeError{Path: path, Reason: "it is a symbolic link"}
		}
		return &UnsafeError{Path: path, Reason: "it is not a " + kindName(kind)}
	}
	return &os.PathError{Op: "open", Path: path, Err: err}
}

// checkOwn is the test of the tool's own directories and files: of the
// given kind, owned by the running user, not writable by group or others.
func checkOwn(path string, st *unix.Stat_t, kind uint32) error {
	if st.Mode&unix.S_IFMT != kind {
		return &UnsafeError{Path: path, Reason: "it is not a " + kindName(kind)}
	}
	if uid := uint32(os.Geteuid()); st.Uid != uid {
		return &UnsafeError{Path: path, Reason: fmt.Sprintf("it is owned by uid %d, not by the running user (uid %d)", st.Uid, uid)}
	}
	if st.Mode&0o022 != 0 {
		return &UnsafeError{Path: path, Reason: fmt.Sprintf("it is writable by its group or others (mode %04o)", st.Mode&0o7777)}
	}
	if kind == unix.S_IFREG && st.Nlink != 1 {
		return &UnsafeError{Path: path, Reason: fmt.Sprintf("it has %d hard links", st.Nlink)}
	}
	return nil
}

// checkAncestor is the test of a directory above the tool's own: owned by
// root or the running user, and not writable by group or others unless
// sticky (so that no one else can rename what the tool created in it).
func checkAncestor(path string, st *unix.Stat_t) error {
	if uid := uint32(os.Geteuid()); st.Uid != 0 && st.Uid != uid {
		return &UnsafeError{Path: path, Reason: fmt.Sprintf("it is owned by uid %d, neither root nor the running user (uid %d)", st.Uid, uid)}
	}
	if st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0 {
		return &UnsafeError{Path: path, Reason: fmt.Sprintf("it is writable by its group or others and not sticky (mode %04o)", st.Mode&0o7777)}
	}
	return nil
}

func kindName(kind uint32) string {
	if kind == unix.S_IFDIR {
		return "directory"
	}
	return "regular file"
}

// checkName accepts a plain file name, never a path.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return fmt.Errorf("statefile: %q is not a file name", name)
	}
	return nil
}
