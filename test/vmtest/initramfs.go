package vmtest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// guestTools are the host commands copied into the guest, with their shared
// libraries, when the host has them (hack/install-deps.sh installs them):
// what netlab and the apply code run. Multi-call binaries (xtables-*-multi)
// keep the name they are called by, as on the host. socat and ss are left
// out: their TLS and Kerberos libraries would double the initramfs.
var guestTools = []string{
	"ip", "nsenter", "unshare",
	"iptables", "iptables-save", "iptables-restore",
	"ip6tables", "ip6tables-save", "ip6tables-restore",
	"iptables-legacy", "iptables-legacy-save", "iptables-legacy-restore",
	"ip6tables-legacy", "ip6tables-legacy-save", "ip6tables-legacy-restore",
	"iptables-nft", "iptables-nft-save", "iptables-nft-restore",
	"ip6tables-nft", "ip6tables-nft-save", "ip6tables-nft-restore",
	"ipset", "nft", "conntrack", "ipvsadm",
}

// busyboxApplets are linked to busybox when no host tool of that name was
// packed: a shell for tests that need one, and modprobe for the kernel's
// request_module and moby/ipvs's `modprobe -va ip_vs`.
var busyboxApplets = []string{"sh", "modprobe", "insmod", "lsmod", "cat", "ls", "sleep", "mount", "ps"}

// xtablesDir holds the iptables extensions, which iptables dlopens.
const xtablesDir = "/usr/lib/x86_64-linux-gnu/xtables"

// guestLibDir is where the guest's shared libraries live (LD_LIBRARY_PATH).
const guestLibDir = "/usr/lib/x86_64-linux-gnu"

// Files inside the initramfs that the guest init reads.
const (
	guestModuleList = "/vmtest/modules" // modules to load, in order
	guestTestBinary = "/vmtest/test"    // the test binary (also /init)
)

// entry is one file of the initramfs.
type entry struct {
	name   string // guest path
	src    string // host file to copy, or
	data   []byte // content, or
	link   string // symlink target
	dir    bool
	unsign bool // a module whose signature is cut off (see unsigned)
	perm   uint32
	chrdev [2]uint32 // major, minor; with dir, link, src and data unset
}

// layout is the base initramfs: everything except the test binary.
type layout struct {
	entries []entry
	notes   []string // what was left out, for the log
}

func (l *layout) add(e entry) { l.entries = append(l.entries, e) }

// baseLayout lists the kernel modules, tools, libraries and skeleton files.
func baseLayout(k *kernel) (*layout, error) {
	l := &layout{}
	for _, d := range []string{"/proc", "/sys", "/dev", "/run", "/tmp", "/root", "/etc", "/usr/bin", "/usr/sbin", "/usr/lib64", guestLibDir} {
		l.add(entry{name: d, dir: true, perm: 0o755})
	}
	// Merged /usr, as on Debian: ldd's paths and the ELF interpreter
	// (/lib64/ld-linux-x86-64.so.2) resolve through these links.
	for _, d := range []string{"bin", "sbin", "lib", "lib64"} {
		l.add(entry{name: "/" + d, link: "usr/" + d})
	}
	l.add(entry{name: "/var/run", link: "../run"})
	l.add(entry{name: "/dev/console", chrdev: [2]uint32{5, 1}, perm: 0o600})
	l.add(entry{name: "/etc/hosts", data: []byte("127.0.0.1 localhost\n::1 localhost\n"), perm: 0o644})
	l.add(entry{name: "/etc/passwd", data: []byte("root:x:0:0:root:/root:/bin/sh\n"), perm: 0o644})
	l.add(entry{name: "/etc/group", data: []byte("root:x:0:\n"), perm: 0o644})
	for _, f := range []string{"/etc/protocols", "/etc/services", "/etc/ethertypes"} {
		if _, err := os.Stat(f); err == nil {
			l.add(entry{name: f, src: f, perm: 0o644})
		}
	}
	if err := addModules(l, k); err != nil {
		return nil, err
	}
	if err := addTools(l); err != nil {
		return nil, err
	}
	return l, nil
}

// addModules packs the module files, the module index files (for
// modprobe) and the preload order.
func addModules(l *layout, k *kernel) error {
	ms, err := readModules(k.modDir())
	if err != nil {
		return err
	}
	base := "/lib/modules/" + k.release
	for _, rel := range ms.packList() {
		l.add(entry{name: base + "/" + rel, src: filepath.Join(ms.dir, rel), unsign: true, perm: 0o644})
	}
	for _, f := range []string{"modules.dep", "modules.alias", "modules.symbols", "modules.builtin", "modules.order"} {
		if _, err := os.Stat(filepath.Join(ms.dir, f)); err == nil {
			l.add(entry{name: base + "/" + f, src: filepath.Join(ms.dir, f), perm: 0o644})
		}
	}
	var order bytes.Buffer
	for _, rel := range ms.loadOrder() {
		fmt.Fprintf(&order, "%s/%s\n", base, rel)
	}
	l.add(entry{name: guestModuleList, data: order.Bytes(), perm: 0o644})
	return nil
}

// addTools packs guestTools, busybox, the iptables extensions and every
// shared library they need (found with ldd).
func addTools(l *layout) error {
	var elfs []string // host files whose libraries we need
	packed := map[string]bool{}
	for _, name := range guestTools {
		p, err := exec.LookPath(name)
		if err != nil {
			l.notes = append(l.notes, name)
			continue
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return err
		}
		if !packed[real] {
			packed[real] = true
			l.add(entry{name: real, src: real, perm: 0o755})
			elfs = append(elfs, real)
		}
		if guest := "/usr/sbin/" + name; guest != real {
			l.add(entry{name: guest, link: real})
		}
		packed["/usr/sbin/"+name] = true
	}
	if bb, err := exec.LookPath("busybox"); err == nil {
		l.add(entry{name: "/usr/bin/busybox", src: bb, perm: 0o755})
		elfs = append(elfs, bb)
		for _, a := range busyboxApplets {
			if !packed["/usr/sbin/"+a] {
				l.add(entry{name: "/usr/sbin/" + a, link: "/usr/bin/busybox"})
			}
		}
	} else {
		l.notes = append(l.notes, "busybox (no shell, no modprobe)")
	}
	if ext, _ := filepath.Glob(xtablesDir + "/*.so"); len(ext) > 0 {
		for _, f := range ext {
			l.add(entry{name: f, src: f, perm: 0o644})
		}
		elfs = append(elfs, ext...)
	}
	libs, err := sharedLibs(elfs)
	if err != nil {
		return err
	}
	for _, lib := range libs {
		guest := guestLibDir + "/" + path.Base(lib)
		if strings.Contains(path.Base(lib), "ld-linux") {
			guest = "/usr/lib64/" + path.Base(lib)
		}
		l.add(entry{name: guest, src: lib, perm: 0o755})
	}
	return nil
}

// sharedLibs runs ldd on the files and returns every library path it names,
// including the ELF interpreter. Static files contribute nothing.
func sharedLibs(files []string) ([]string, error) {
	if len(files) == 0 {
		return nil, nil
	}
	out, err := exec.Command("ldd", files...).Output()
	if err != nil && len(out) == 0 {
		return nil, fmt.Errorf("ldd: %w", err)
	}
	set := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if _, after, ok := strings.Cut(line, "=> "); ok {
			line = after
		}
		f := strings.Fields(line)
		if len(f) >= 2 && strings.HasPrefix(f[0], "/") && strings.HasPrefix(f[1], "(0x") {
			set[f[0]] = true
		}
	}
	libs := make([]string, 0, len(set))
	for l := range set {
		libs = append(libs, l)
	}
	sort.Strings(libs)
	return libs, nil
}

// key identifies the layout's content: paths, and for host files their
// size and modification time (the cache is rebuilt when a package update
// changes a tool or library).
func (l *layout) key() (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "vmtest-layout-v2\n")
	for _, e := range l.entries {
		fmt.Fprintf(h, "%s %o %q %v %v %d %d\n", e.name, e.perm, e.link, e.dir, e.unsign, e.chrdev, len(e.data))
		h.Write(e.data)
		if e.src != "" {
			st, err := os.Stat(e.src)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(h, "%s %d %d\n", e.src, st.Size(), st.ModTime().UnixNano())
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// write writes the layout as a cpio archive (without closing w).
func (l *layout) write(w io.Writer) error {
	c := newCPIOWriter(w)
	for _, e := range l.entries {
		switch {
		case e.dir:
			c.Dir(e.name)
		case e.link != "":
			c.Symlink(e.name, e.link)
		case e.unsign:
			b, err := os.ReadFile(e.src)
			if err != nil {
				return err
			}
			c.File(e.name, e.perm, unsigned(b))
		case e.src != "":
			c.CopyFile(e.name, e.src, e.perm)
		case e.data != nil:
			c.File(e.name, e.perm, e.data)
		default:
			c.CharDev(e.name, e.perm, e.chrdev[0], e.chrdev[1])
		}
	}
	return c.Close()
}

// baseArchive returns the path of the cached base archive for kernel k,
// building it when the layout changed. One process checks the layout once
// (ldd takes most of a second).
func baseArchive(k *kernel) (string, []string, error) {
	baseMu.Lock()
	defer baseMu.Unlock()
	if b, ok := baseDone[k.dir]; ok {
		return b.path, b.notes, nil
	}
	l, err := baseLayout(k)
	if err != nil {
		return "", nil, err
	}
	key, err := l.key()
	if err != nil {
		return "", nil, err
	}
	p := filepath.Join(k.dir, "base-"+key+".cpio")
	if _, err := os.Stat(p); err != nil {
		if err := writeBase(k, l, p); err != nil {
			return "", nil, err
		}
	}
	baseDone[k.dir] = builtBase{p, l.notes}
	return p, l.notes, nil
}

var (
	baseMu   sync.Mutex
	baseDone = map[string]builtBase{} // by kernel directory
)

type builtBase struct {
	path  string
	notes []string
}

// writeBase writes the layout to p through a temporary file, so that a
// concurrent test process never reads half an archive.
func writeBase(k *kernel, l *layout, p string) error {
	f, err := os.CreateTemp(k.dir, ".base-*.cpio")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	bw := bufio.NewWriterSize(f, 1<<20)
	err = l.write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		return fmt.Errorf("build initramfs: %w", err)
	}
	removeStale(k.dir, p)
	return nil
}

// removeStale deletes older base archives of the same kernel.
func removeStale(dir, keep string) {
	old, _ := filepath.Glob(filepath.Join(dir, "base-*.cpio"))
	for _, o := range old {
		if o != keep {
			os.Remove(o)
		}
	}
}

// moduleSigMagic ends a signed module: ... signature, struct
// module_signature (12 bytes, the signature's length big-endian in the
// last 4), then this string.
const moduleSigMagic = "~Module signature appended~\n"

// unsigned cuts the appended signature off a module file. The guest kernel
// then loads it without checking the signature (it only notes a taint;
// nothing enforces signatures there), which under TCG saves several
// milliseconds per module.
func unsigned(ko []byte) []byte {
	if !bytes.HasSuffix(ko, []byte(moduleSigMagic)) {
		return ko
	}
	end := len(ko) - len(moduleSigMagic)
	if end < 12 {
		return ko
	}
	info := ko[end-12 : end]
	sigLen := int(info[8])<<24 | int(info[9])<<16 | int(info[10])<<8 | int(info[11])
	start := end - 12 - sigLen
	if start < 0 {
		return ko
	}
	return ko[:start]
}
