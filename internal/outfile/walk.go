package outfile

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// dir is an open directory of a walk: on Linux a descriptor, elsewhere a
// path (dir_linux.go, dir_other.go).
type dir interface {
	// entry describes name in the directory, without following a link.
	entry(name string) (entry, error)
	// sub opens the directory name, at path, without following a link.
	sub(name, path string) (dir, error)
	// create creates name, a new file with mode 0600.
	create(name string) (*os.File, error)
	rename(from, to string) error
	remove(name string) error
	close()
}

// entry is what a directory holds under a name.
type entry struct {
	missing bool
	mode    fs.FileMode
	// target is where a symbolic link points, and refusal why it is not
	// followed ("" if it is: root or the running user owns it).
	target, refusal string
}

// spot is where a write to a path goes: the name in the open directory,
// the file's path with its links resolved, and the permission bits the
// new file gets.
type spot struct {
	dir  dir
	name string
	path string
	perm fs.FileMode
}

// walker resolves a path one component at a time.
type walker struct {
	given string // the path as given, for refusals
	d     dir    // the directory reached
	at    string // its path, links resolved
	links int
}

// resolve walks path from the root or the working directory to its last
// component, checking every symbolic link on the way, and judges what is
// there. The caller closes the spot's directory.
func resolve(path string) (*spot, error) {
	if path == "" || os.IsPathSeparator(path[len(path)-1]) {
		return nil, &RefusedError{Path: path, Reason: "it names a directory"}
	}
	d, at, err := start(path)
	if err != nil {
		return nil, err
	}
	w := &walker{given: path, d: d, at: at}
	s, err := w.walk(components(path))
	if err != nil {
		w.d.close()
	}
	return s, err
}

// walk goes through todo, the components still to resolve.
func (w *walker) walk(todo []string) (*spot, error) {
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		e, err := w.d.entry(name)
		if err != nil {
			return nil, err
		}
		here := filepath.Join(w.at, name)
		switch {
		case e.mode&fs.ModeSymlink != 0:
			more, err := w.follow(here, e)
			if err != nil {
				return nil, err
			}
			todo = append(more, todo...)
		case len(todo) == 0:
			return w.last(name, here, e)
		case name == ".":
		case e.missing:
			return nil, &fs.PathError{Op: "open", Path: here, Err: fs.ErrNotExist}
		case !e.mode.IsDir():
			return nil, &fs.PathError{Op: "open", Path: here, Err: syscall.ENOTDIR}
		default:
			sub, err := w.d.sub(name, here)
			if err != nil {
				return nil, err
			}
			w.d.close()
			w.d, w.at = sub, here
		}
	}
	// A link to the root directory was the last component.
	return nil, refused(w.given, w.links, w.at, "it is a directory")
}

// follow checks the symbolic link at path and returns the components of
// its target, to walk before the rest.
func (w *walker) follow(path string, e entry) ([]string, error) {
	if e.refusal != "" {
		return nil, &RefusedError{Path: w.given, Reason: path + " is a symbolic link " + e.refusal}
	}
	if w.links++; w.links > maxLinks {
		return nil, &RefusedError{Path: w.given, Reason: "it goes through more than 40 symbolic links"}
	}
	if filepath.IsAbs(e.target) {
		d, at, err := start(e.target)
		if err != nil {
			return nil, err
		}
		w.d.close()
		w.d, w.at = d, at
	}
	return components(e.target), nil
}

// last judges the last component: a regular file or none is written.
func (w *walker) last(name, path string, e entry) (*spot, error) {
	switch {
	case e.missing:
		return &spot{dir: w.d, name: name, path: path, perm: newFileMode}, nil
	case e.mode.IsRegular():
		return &spot{dir: w.d, name: name, path: path, perm: e.mode.Perm()}, nil
	}
	return nil, refused(w.given, w.links, path, "it is "+kindName(e.mode))
}

// components splits a path, without its volume name, into its non-empty
// components.
func components(path string) []string {
	path = path[len(filepath.VolumeName(path)):]
	return strings.FieldsFunc(path, func(r rune) bool { return r < 0x80 && os.IsPathSeparator(uint8(r)) })
}
