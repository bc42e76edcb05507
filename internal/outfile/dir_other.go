//go:build !linux

package outfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// pathDir is a directory named by its path: without Linux's O_PATH, the
// walk goes by names, each link checked as on Linux but every step a
// lookup of its own.
type pathDir string

// start names the directory a walk of path starts from: its root for an
// absolute path, the working directory for a relative one.
func start(path string) (dir, string, error) {
	if filepath.IsAbs(path) {
		root := filepath.VolumeName(path) + string(filepath.Separator)
		return pathDir(root), root, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, "", err
	}
	return pathDir(wd), wd, nil
}

func (d pathDir) entry(name string) (entry, error) {
	path := filepath.Join(string(d), name)
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return entry{missing: true}, nil
	}
	if err != nil {
		return entry{}, err
	}
	e := entry{mode: fi.Mode()}
	if e.mode&fs.ModeSymlink != 0 {
		if e.target, err = os.Readlink(path); err != nil {
			return entry{}, err
		}
		e.refusal = linkOwnerRefusal(fi)
	}
	return e, nil
}

func (d pathDir) sub(_, path string) (dir, error) { return pathDir(path), nil }

func (d pathDir) create(name string) (*os.File, error) {
	return os.OpenFile(filepath.Join(string(d), name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, newFileMode)
}

func (d pathDir) rename(from, to string) error {
	return os.Rename(filepath.Join(string(d), from), filepath.Join(string(d), to))
}

func (d pathDir) remove(name string) error { return os.Remove(filepath.Join(string(d), name)) }

func (d pathDir) close() {}
