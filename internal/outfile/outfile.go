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
//     so the link stays a link.
//
// The path is walked one component at a time, from the root or, for a
// relative path, the working directory, as the kernel resolves it, and
// every symbolic link met on the way, a directory's as much as the last
// component's, is followed only when root or the running user owns it:
// root writing to /tmp/x/dir/file must not follow a link another user
// planted at /tmp/x/dir (the kernel's protected_symlinks, where it is
// on, stops only links in sticky world-writable directories). On Linux
// the walk holds each directory open, without following links but those
// it checked, and the temporary file is created and renamed relative to
// the last one: what was checked is where the file goes. Elsewhere the
// walk goes by path names.
//
// The check of the last component and the rename are two steps: someone
// who may write to the target's directory can still swap the name between
// them. That user can replace the file anyway; the check is for the
// operator's own mistakes and for links others may plant.
package outfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"strconv"
)

// RefusedError is a target the tool will not write to, and why.
type RefusedError struct {
	Path   string
	Reason string
}

func (e *RefusedError) Error() string { return "refusing to write " + e.Path + ": " + e.Reason }

// newFileMode is the mode of a file that did not exist.
const newFileMode fs.FileMode = 0o600

// maxLinks bounds the symbolic links followed for one path, as the
// kernel's ELOOP does.
const maxLinks = 40

// Target is where a write to a path goes.
type Target struct {
	// Path is the file to replace: the path given, with every symbolic
	// link in it resolved.
	Path string
	// Perm is the permission bits the new file gets: the old file's, or
	// 0600 for a new one.
	Perm fs.FileMode
}

// Check looks at what is at path and says where a write to it goes, or
// refuses it with a *RefusedError naming path and the reason.
func Check(path string) (Target, error) {
	s, err := resolve(path)
	if err != nil {
		return Target{}, err
	}
	s.dir.close()
	return Target{Path: s.path, Perm: s.perm}, nil
}

// refused refuses path, saying what is at at if links led there.
func refused(path string, links int, at, reason string) error {
	if links > 0 {
		reason = "its symbolic links lead to " + at + ", and " + reason
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

// Write replaces the file at path with what write writes, after the
// checks of Check: through a temporary file in the target's directory,
// renamed into place only when write succeeded. Both are made relative to
// the directory the checks opened (on Linux), never through the path
// again.
func Write(path string, write func(io.Writer) error) error {
	s, err := resolve(path)
	if err != nil {
		return err
	}
	defer s.dir.close()
	f, tmp, err := createTemp(s.dir, s.name)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	err = write(f)
	if err == nil && s.perm != newFileMode {
		err = f.Chmod(s.perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.dir.rename(tmp, s.name)
	}
	if err != nil {
		s.dir.remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// createTemp creates a new file, mode 0600, named after name in d.
func createTemp(d dir, name string) (*os.File, string, error) {
	for range 100 {
		tmp := "." + name + "." + strconv.FormatUint(uint64(rand.Uint32()), 10)
		f, err := d.create(tmp)
		if !errors.Is(err, fs.ErrExist) {
			return f, tmp, err
		}
	}
	return nil, "", fmt.Errorf("no free temporary name for %s", name)
}
