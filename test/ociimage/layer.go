package ociimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// tarWriter writes the reproducible form of a layer: fixed times, root
// owners, no names.
type tarWriter struct {
	tw      *tar.Writer
	mtime   time.Time
	written map[string]bool // entries written, to add parents once
	// fixedModes stores directories as 0755 and files as 0644, whatever
	// the umask gave them (for the archive's own layout files).
	fixedModes bool
}

func newTarWriter(w io.Writer, mtime time.Time) *tarWriter {
	return &tarWriter{tw: tar.NewWriter(w), mtime: mtime, written: map[string]bool{}}
}

// header returns a header for name with the fields every entry shares.
func (t *tarWriter) header(name string, typ byte, mode fs.FileMode) *tar.Header {
	if t.fixedModes {
		mode = 0o644
		if typ == tar.TypeDir {
			mode = 0o755
		}
	}
	perm := int64(mode.Perm())
	if mode&fs.ModeSetuid != 0 {
		perm |= 0o4000
	}
	if mode&fs.ModeSetgid != 0 {
		perm |= 0o2000
	}
	if mode&fs.ModeSticky != 0 {
		perm |= 0o1000
	}
	return &tar.Header{Typeflag: typ, Name: name, Mode: perm, ModTime: t.mtime, Format: tar.FormatPAX}
}

func (t *tarWriter) writeHeader(h *tar.Header) error {
	if h.Typeflag == tar.TypeDir && !strings.HasSuffix(h.Name, "/") {
		h.Name += "/"
	}
	key := strings.TrimSuffix(h.Name, "/")
	if t.written[key] {
		return fmt.Errorf("layer: %s appears twice", key)
	}
	t.written[key] = true
	return t.tw.WriteHeader(h)
}

// parents writes the directories above name that are not written yet.
func (t *tarWriter) parents(name string) error {
	dir := path.Dir(name)
	if dir == "." || t.written[dir] {
		return nil
	}
	if err := t.parents(dir); err != nil {
		return err
	}
	return t.writeHeader(t.header(dir, tar.TypeDir, 0o755))
}

// cleanPath turns a File.Path into a tar entry name.
func cleanPath(p string) (string, error) {
	name := path.Clean("/" + p)[1:]
	if name == "" {
		return "", fmt.Errorf("layer: file path %q names the root", p)
	}
	return name, nil
}

// filesTar writes an in-memory layer sorted by path, hard links after
// every other entry so that their targets precede them.
func filesTar(files []File, mtime time.Time) ([]byte, error) {
	type entry struct {
		name string
		f    *File
	}
	entries := make([]entry, len(files))
	for i := range files {
		name, err := cleanPath(files[i].Path)
		if err != nil {
			return nil, err
		}
		entries[i] = entry{name, &files[i]}
	}
	slices.SortStableFunc(entries, func(a, b entry) int {
		if la, lb := a.f.isHardLink(), b.f.isHardLink(); la != lb {
			if la {
				return 1
			}
			return -1
		}
		return strings.Compare(a.name, b.name)
	})
	var buf bytes.Buffer
	t := newTarWriter(&buf, mtime)
	for _, e := range entries {
		if err := t.parents(e.name); err != nil {
			return nil, err
		}
		if err := t.writeFile(e.name, e.f); err != nil {
			return nil, err
		}
	}
	if err := t.tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (f *File) isHardLink() bool { return f.Mode.Type() == 0 && f.HardLink != "" }

func (t *tarWriter) writeFile(name string, f *File) error {
	switch {
	case f.Mode&fs.ModeDir != 0:
		return t.writeHeader(t.header(name, tar.TypeDir, f.Mode))
	case f.Mode&fs.ModeSymlink != 0:
		h := t.header(name, tar.TypeSymlink, 0o777)
		h.Linkname = f.Link
		return t.writeHeader(h)
	case f.Mode.Type() != 0:
		return fmt.Errorf("layer: %s: unsupported file type %v", name, f.Mode.Type())
	case f.isHardLink():
		target, err := cleanPath(f.HardLink)
		if err != nil {
			return err
		}
		if !t.written[target] {
			return fmt.Errorf("layer: %s: hard link to %s, which the layer does not hold", name, target)
		}
		h := t.header(name, tar.TypeLink, f.Mode)
		h.Linkname = target
		return t.writeHeader(h)
	}
	h := t.header(name, tar.TypeReg, f.Mode)
	h.Size = int64(len(f.Data))
	if err := t.writeHeader(h); err != nil {
		return err
	}
	_, err := t.tw.Write(f.Data)
	return err
}

// dirTar writes the tree under root (not root itself) in lexical walk
// order.
func dirTar(root string, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	t := newTarWriter(&buf, mtime)
	if err := t.addTree(root); err != nil {
		return nil, err
	}
	if err := t.tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (t *tarWriter) addTree(root string) error {
	type inode struct{ dev, ino uint64 }
	seen := map[inode]string{}
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		mode := info.Mode()
		switch {
		case mode.IsDir():
			return t.writeHeader(t.header(name, tar.TypeDir, mode))
		case mode&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			h := t.header(name, tar.TypeSymlink, 0o777)
			h.Linkname = target
			return t.writeHeader(h)
		case !mode.IsRegular():
			return fmt.Errorf("layer: %s: unsupported file type %v", p, mode.Type())
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
			key := inode{uint64(st.Dev), st.Ino}
			if first, ok := seen[key]; ok {
				h := t.header(name, tar.TypeLink, mode)
				h.Linkname = first
				return t.writeHeader(h)
			}
			seen[key] = name
		}
		return t.copyFile(name, p, mode, info.Size())
	})
}

func (t *tarWriter) copyFile(name, p string, mode fs.FileMode, size int64) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	h := t.header(name, tar.TypeReg, mode)
	h.Size = size
	if err := t.writeHeader(h); err != nil {
		return err
	}
	if _, err := io.Copy(t.tw, f); err != nil {
		return fmt.Errorf("layer: %s: %w", p, err)
	}
	return nil
}

// layerTar returns the layer's uncompressed tar.
func layerTar(l Layer, mtime time.Time) ([]byte, error) {
	switch {
	case l.Dir != "" && l.Files != nil:
		return nil, fmt.Errorf("layer: give Dir or Files, not both")
	case l.Dir != "":
		return dirTar(l.Dir, mtime)
	default:
		return filesTar(l.Files, mtime)
	}
}
