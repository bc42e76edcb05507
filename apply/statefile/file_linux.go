package statefile

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// OpenFile opens the file name in d for reading and writing, creating it
// with mode 0600. It refuses a symbolic link (O_NOFOLLOW), a file that is
// not regular, one not owned by the running user, one writable by group or
// others, and one with other hard links.
func (d *Dir) OpenFile(name string) (*os.File, error) {
	return d.open(name, unix.O_RDWR|unix.O_CREAT)
}

// open opens the file name in d with flags, checked as OpenFile says.
func (d *Dir) open(name string, flags int) (*os.File, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	path := filepath.Join(d.path, name)
	fd, err := unix.Openat(d.fd, name, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, &os.PathError{Op: "open", Path: path, Err: os.ErrNotExist}
		}
		return nil, openError(d.fd, path, name, unix.S_IFREG, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if err := checkOwn(path, &st, unix.S_IFREG); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// ReadFile returns the content of the file name in d, checked as OpenFile
// says.
func (d *Dir) ReadFile(name string) ([]byte, error) {
	f, err := d.open(name, unix.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// One allocation of the right size: the cache of a 10k-Service table
	// is about 5 MB.
	var b bytes.Buffer
	if fi, err := f.Stat(); err == nil {
		b.Grow(int(fi.Size()) + bytes.MinRead)
	}
	_, err = b.ReadFrom(f)
	return b.Bytes(), err
}

// WriteFile replaces the file name in d with data atomically: it writes a
// new file (O_EXCL, O_NOFOLLOW, mode 0600) in d and renames it over name,
// so a reader sees the old content or the new, never a part. It replaces
// a regular file or a symbolic link (the link itself, never its target),
// and refuses anything else (see checkReplaceable).
//
// It does not fsync the file or the directory. What the tool keeps here
// are caches whose envelope names the boot (Key.BootID): the only failure
// that could leave a file unwritten or torn on disk is the node's own
// crash, after which every file is stale by its boot ID anyway (and a
// torn one fails its checksum). An fsync would only cost each apply two
// disk flushes per file (about 2 ms each on this machine's disk, far
// more on a node whose disk etcd or the kubelet keeps busy) and push the
// filesystem's journal for the node's other writers.
func (d *Dir) WriteFile(name string, data []byte) error {
	return d.writeFile(name, data)
}

// writeFile is WriteFile of the concatenation of parts.
func (d *Dir) writeFile(name string, parts ...[]byte) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := d.checkReplaceable(name); err != nil {
		return err
	}
	tmp, f, err := d.createTemp(name)
	if err != nil {
		return err
	}
	for _, p := range parts {
		if err == nil {
			_, err = f.Write(p)
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(d.fd, tmp, d.fd, name)
	}
	if err != nil {
		_ = unix.Unlinkat(d.fd, tmp, 0)
		// The file's own name, not the temporary one's, as createTemp.
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &os.PathError{Op: "write", Path: filepath.Join(d.path, name), Err: err}
	}
	return nil
}

// checkReplaceable refuses to rename over name when it is a device, FIFO,
// socket or directory: the tool makes only regular files here, so such a
// file was made by someone on purpose, and a rename would destroy it (as
// an output file's would /dev/null: internal/outfile). A regular file
// that fails checkOwn and a symbolic link are replaced: the new file is
// the user's own, 0600, which repairs the one a read refused, and a
// rename replaces a link without following it.
func (d *Dir) checkReplaceable(name string) error {
	var st unix.Stat_t
	err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil
	case err != nil:
		return &os.PathError{Op: "stat", Path: filepath.Join(d.path, name), Err: err}
	}
	if kind := st.Mode & unix.S_IFMT; kind != unix.S_IFREG && kind != unix.S_IFLNK {
		return &UnsafeError{Path: filepath.Join(d.path, name), Reason: "it is not a regular file"}
	}
	return nil
}

// createTemp creates a new, unique file in d for name's next content.
func (d *Dir) createTemp(name string) (string, *os.File, error) {
	for range 10 {
		tmp := fmt.Sprintf(".%s.%d-%x.tmp", name, os.Getpid(), rand.Uint32())
		fd, err := unix.Openat(d.fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			// Named by the file it is for: the temporary name means
			// nothing to the reader (EROFS, ENOSPC, EACCES).
			return "", nil, &os.PathError{Op: "write", Path: filepath.Join(d.path, name), Err: err}
		}
		return tmp, os.NewFile(uintptr(fd), filepath.Join(d.path, tmp)), nil
	}
	return "", nil, fmt.Errorf("write %s: no unused temporary name", filepath.Join(d.path, name))
}

// Remove removes the file name from d (a symbolic link itself, never its
// target). A missing file is not an error.
func (d *Dir) Remove(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := unix.Unlinkat(d.fd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "remove", Path: filepath.Join(d.path, name), Err: err}
	}
	return nil
}
