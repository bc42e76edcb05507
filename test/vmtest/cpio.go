package vmtest

import (
	"fmt"
	"io"
	"os"
	"path"
	"strings"
)

// cpioWriter writes the "newc" cpio format, the one the kernel unpacks as
// an initramfs. The kernel accepts several archives concatenated, which is
// how a cached base archive and a per-run archive become one initrd.
// Parent directories are created on demand, each once.
type cpioWriter struct {
	w    io.Writer
	n    int64 // bytes written, for the 4-byte alignment
	ino  uint32
	dirs map[string]bool
	err  error
}

func newCPIOWriter(w io.Writer) *cpioWriter {
	return &cpioWriter{w: w, ino: 1, dirs: map[string]bool{"": true, ".": true, "/": true}}
}

// Mode bits of the cpio header (octal, as in stat(2)).
const (
	cpioDir     = 0o040000
	cpioFile    = 0o100000
	cpioSymlink = 0o120000
	cpioChar    = 0o020000
)

// header writes one entry header and its name, padded to 4 bytes.
func (c *cpioWriter) header(name string, mode uint32, size int64, rdevMajor, rdevMinor uint32) {
	if c.err != nil {
		return
	}
	c.ino++
	name = strings.TrimPrefix(name, "/")
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, 1, 0, size, 0, 0, rdevMajor, rdevMinor, len(name)+1, 0)
	c.write([]byte(hdr + name + "\x00"))
	c.pad()
}

func (c *cpioWriter) write(b []byte) {
	if c.err != nil {
		return
	}
	n, err := c.w.Write(b)
	c.n += int64(n)
	c.err = err
}

func (c *cpioWriter) pad() {
	if r := c.n % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

// mkdirAll adds the directory p and its parents, once each.
func (c *cpioWriter) mkdirAll(p string) {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	if c.dirs[p] {
		return
	}
	c.mkdirAll(path.Dir(p))
	c.dirs[p] = true
	c.header(p, cpioDir|0o755, 0, 0, 0)
}

// File adds a regular file with the given content.
func (c *cpioWriter) File(name string, perm uint32, data []byte) {
	c.mkdirAll(path.Dir(name))
	c.header(name, cpioFile|perm, int64(len(data)), 0, 0)
	c.write(data)
	c.pad()
}

// CopyFile adds the host file src (following symlinks) as name.
func (c *cpioWriter) CopyFile(name, src string, perm uint32) {
	if c.err != nil {
		return
	}
	f, err := os.Open(src)
	if err != nil {
		c.err = err
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		c.err = err
		return
	}
	c.mkdirAll(path.Dir(name))
	c.header(name, cpioFile|perm, st.Size(), 0, 0)
	if c.err != nil {
		return
	}
	n, err := io.Copy(c.w, f)
	c.n += n
	if err == nil && n != st.Size() {
		err = fmt.Errorf("%s changed while being copied", src)
	}
	c.err = err
	c.pad()
}

// Symlink adds name pointing at target.
func (c *cpioWriter) Symlink(name, target string) {
	c.mkdirAll(path.Dir(name))
	c.header(name, cpioSymlink|0o777, int64(len(target)), 0, 0)
	c.write([]byte(target))
	c.pad()
}

// Dir adds an empty directory.
func (c *cpioWriter) Dir(name string) { c.mkdirAll(name) }

// CharDev adds a character device node, e.g. /dev/console (5, 1), which the
// kernel opens as init's stdin, stdout and stderr.
func (c *cpioWriter) CharDev(name string, perm, major, minor uint32) {
	c.mkdirAll(path.Dir(name))
	c.header(name, cpioChar|perm, 0, major, minor)
}

// Close writes the trailer. It does not close the underlying writer.
func (c *cpioWriter) Close() error {
	c.header("TRAILER!!!", 0, 0, 0, 0)
	return c.err
}
