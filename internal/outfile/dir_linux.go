package outfile

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// fdDir is a directory held open with O_PATH: every step of a walk and
// the write itself are made relative to it, never through its path.
type fdDir struct {
	fd   int
	path string
}

// start opens the directory a walk of path starts from: the root for an
// absolute path, the working directory for a relative one.
func start(path string) (dir, string, error) {
	from, at := "/", "/"
	if !filepath.IsAbs(path) {
		wd, err := os.Getwd()
		if err != nil {
			return nil, "", err
		}
		from, at = ".", wd
	}
	fd, err := unix.Open(from, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", &os.PathError{Op: "open", Path: at, Err: err}
	}
	return &fdDir{fd: fd, path: at}, at, nil
}

func (d *fdDir) entry(name string) (entry, error) {
	path := filepath.Join(d.path, name)
	fd, err := unix.Openat(d.fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return entry{missing: true}, nil
	}
	if err != nil {
		return entry{}, &os.PathError{Op: "open", Path: path, Err: err}
	}
	// The type, the owner and the target are read from the one
	// descriptor: a name swapped meanwhile cannot mix two files.
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return entry{}, err
	}
	e := entry{mode: fi.Mode()}
	if e.mode&os.ModeSymlink == 0 {
		return e, nil
	}
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return entry{}, &os.PathError{Op: "readlink", Path: path, Err: err}
	}
	e.target, e.refusal = string(buf[:n]), linkOwnerRefusal(fi)
	return e, nil
}

// sub opens name as a directory: O_NOFOLLOW and O_DIRECTORY fail on a
// link swapped in since entry looked.
func (d *fdDir) sub(name, path string) (dir, error) {
	fd, err := unix.Openat(d.fd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return &fdDir{fd: fd, path: path}, nil
}

func (d *fdDir) create(name string) (*os.File, error) {
	path := filepath.Join(d.path, name)
	fd, err := unix.Openat(d.fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(newFileMode))
	if err != nil {
		return nil, &os.PathError{Op: "create", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

func (d *fdDir) rename(from, to string) error {
	if err := unix.Renameat(d.fd, from, d.fd, to); err != nil {
		return &os.LinkError{Op: "rename", Old: filepath.Join(d.path, from), New: filepath.Join(d.path, to), Err: err}
	}
	return nil
}

func (d *fdDir) remove(name string) error { return unix.Unlinkat(d.fd, name, 0) }

func (d *fdDir) close() { unix.Close(d.fd) }
