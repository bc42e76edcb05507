package statefile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// maxLinks is the kernel's limit on symbolic links followed in one lookup.
const maxLinks = 40

// walker resolves a directory's path one component at a time from the
// root, checking every directory and symbolic link on the way, as the
// kernel would resolve it but with ssh's test at each step.
type walker struct {
	fd    int    // O_PATH descriptor of the directory reached
	path  string // its path, with the links resolved
	links int
	// existing walks only what exists: a missing component is an error,
	// never created (for reading a file, see OpenOwnFile).
	existing bool
}

// walkAncestors opens the directory at path, creating missing components
// (mode 0700), following only the symbolic links that root or the user
// owns, and checking each directory with checkAncestor. The caller closes
// the walker's descriptor.
func walkAncestors(path string) (*walker, error) {
	return walk(&walker{fd: -1}, path)
}

// walk walks w from the root to path.
func walk(w *walker, path string) (*walker, error) {
	if err := w.restart(); err != nil {
		return nil, err
	}
	todo := components(path)
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		more, err := w.step(name)
		if err != nil {
			unix.Close(w.fd)
			return nil, err
		}
		todo = append(more, todo...)
	}
	return w, nil
}

// restart goes back to the root directory.
func (w *walker) restart() error {
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: "/", Err: err}
	}
	return w.enter(fd, "/")
}

// enter makes fd, the directory at path, the current one if it passes.
func (w *walker) enter(fd int, path string) error {
	var st unix.Stat_t
	err := unix.Fstat(fd, &st)
	switch {
	case err != nil:
		err = &os.PathError{Op: "stat", Path: path, Err: err}
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		err = &UnsafeError{Path: path, Reason: "it is not a directory"}
	default:
		err = checkAncestor(path, &st)
	}
	if err != nil {
		unix.Close(fd)
		return err
	}
	if w.fd >= 0 {
		unix.Close(w.fd)
	}
	w.fd, w.path = fd, path
	return nil
}

// step moves to the entry name of the current directory. For a symbolic
// link it returns the components of the target, to walk before the rest.
func (w *walker) step(name string) ([]string, error) {
	if name == "." {
		return nil, nil
	}
	path := filepath.Join(w.path, name) // the parent, for ".."
	fd, err := w.open(name, path)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		return nil, w.enter(fd, path)
	}
	defer unix.Close(fd)
	return w.follow(fd, path, &st)
}

// open opens the entry itself (a link is not followed), creating a
// missing one as a directory.
func (w *walker) open(name, path string) (int, error) {
	const flags = unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat(w.fd, name, flags, 0)
	if errors.Is(err, unix.ENOENT) && !w.existing {
		if err := unix.Mkdirat(w.fd, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, &os.PathError{Op: "mkdir", Path: path, Err: err}
		}
		fd, err = unix.Openat(w.fd, name, flags, 0)
	}
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return fd, nil
}

// follow reads the symbolic link fd, at path, if root or the user owns it
// (no one else can then change where it points).
func (w *walker) follow(fd int, path string, st *unix.Stat_t) ([]string, error) {
	if uid := uint32(os.Geteuid()); st.Uid != 0 && st.Uid != uid {
		return nil, &UnsafeError{Path: path, Reason: fmt.Sprintf("it is a symbolic link owned by uid %d, neither root nor the running user (uid %d)", st.Uid, uid)}
	}
	if w.links++; w.links > maxLinks {
		return nil, &os.PathError{Op: "open", Path: path, Err: unix.ELOOP}
	}
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return nil, &os.PathError{Op: "readlink", Path: path, Err: err}
	}
	target := string(buf[:n])
	if filepath.IsAbs(target) {
		if err := w.restart(); err != nil {
			return nil, err
		}
	}
	return components(target), nil
}

// components splits a path into its non-empty components.
func components(path string) []string {
	var out []string
	for _, c := range strings.Split(path, "/") {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}
