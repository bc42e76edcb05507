// Package outfile writes the files a user names on the command line
// (snapshot --output-file, plan --out): whole or not at all, and only
// over a regular file.
//
// A write goes to a temporary file in the target's directory that is then
// renamed over the target, so a failed write leaves the old file as it
// was. A rename replaces whatever name it lands on, so the target is
// looked at first (Check):
//   - missing: a new file with mode 0600 (a snapshot or a plan describes
//     the cluster; a saved plan must not be writable by others anyway);
//   - a regular file: replaced, keeping its permission bits, as the
//     shell's `>` does; the new file is owned by the running user;
//   - a device, FIFO, socket or directory: refused. Renaming over
//     /dev/null would turn the node's /dev/null into a plain file;
//   - a symbolic link: followed, as `>` follows it, and the file it leads
//     to is judged by these same rules and replaced in its own directory,
//     so the link stays a link. A link is followed only when root or the
//     running user owns it: root writing to /tmp/x must not follow a link
//     another user planted there (the kernel's protected_symlinks stops
//     `>` there; a rename of a resolved path would not be stopped).
//
// The check and the rename are two steps: someone who may write to the
// target's directory can still swap the name between them. That user can
// replace the file anyway; the check is for the operator's own mistakes
// and for links others may plant.
package outfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// RefusedError is a target the tool will not write to, and why.
type RefusedError struct {
	Path   string
	Reason string
}

func (e *RefusedError) Error() string { return "refusing to write " + e.Path + ": " + e.Reason }

// newFileMode is the mode of a file that did not exist.
const newFileMode fs.FileMode = 0o600

// maxLinks bounds a chain of symbolic links, as the kernel's ELOOP does.
const maxLinks = 40

// Target is where a write to a path goes.
type Target struct {
	// Path is the file to replace: the path given, or where its
	// symbolic links lead.
	Path string
	// Perm is the permission bits the new file gets: the old file's, or
	// 0600 for a new one.
	Perm fs.FileMode
}

// Check looks at what is at path and says where a write to it goes, or
// refuses it with a *RefusedError naming path and the reason.
func Check(path string) (Target, error) {
	p := path
	for range maxLinks {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return Target{Path: p, Perm: newFileMode}, nil
		}
		if err != nil {
			return Target{}, err
		}
		mode := fi.Mode()
		if mode.IsRegular() {
			return Target{Path: p, Perm: mode.Perm()}, nil
		}
		if mode&fs.ModeSymlink == 0 {
			return Target{}, refused(path, p, "it is "+kindName(mode))
		}
		if reason := linkOwnerRefusal(fi); reason != "" {
			return Target{}, refused(path, p, reason)
		}
		dest, err := os.Readlink(p)
		if err != nil {
			return Target{}, err
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(p), dest)
		}
		p = dest
	}
	return Target{}, &RefusedError{Path: path, Reason: fmt.Sprintf("more than %d symbolic links", maxLinks)}
}

// refused names the path given, and the file a link led to if that is
// the one refused.
func refused(path, at, reason string) error {
	if at != path {
		reason = "it is a symbolic link to " + at + ", and " + reason
	}
	return &RefusedError{Path: path, Reason: reason}
}

// kindName names a file's type for the refusal.
func kindName(mode fs.FileMode) string {
	switch {
	case mode.IsDir():
		return "a directory"
	case mode&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	case mode&fs.ModeCharDevice != 0:
		return "a character device"
	case mode&fs.ModeDevice != 0:
		return "a block device"
	}
	return "not a regular file (" + mode.Type().String() + ")"
}

// Write replaces the file at path with what write writes, after Check:
// through a temporary file in the target's directory, renamed into place
// only when write succeeded.
func Write(path string, write func(io.Writer) error) error {
	t, err := Check(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(t.Path), "."+filepath.Base(t.Path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	err = write(tmp)
	if err == nil && t.Perm != newFileMode {
		err = tmp.Chmod(t.Perm)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Rename(tmp.Name(), t.Path)
}
