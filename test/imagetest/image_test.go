// Package imagetest builds the kubectl-svcproxy image with hack/image.sh
// (linux/amd64; the .debs are cached under _cache/image) and checks what
// it holds, then runs its programs from the unpacked root filesystem in a
// throwaway network, mount and PID namespace.
package imagetest

import (
	"bytes"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/ociimage"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

var amd64 = ociimage.Platform{OS: "linux", Architecture: "amd64"}

const imagePath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// buildImage runs hack/image.sh for amd64 into a temporary directory and
// returns the archive's contents.
func buildImage(t *testing.T) *ociimage.Contents {
	t.Helper()
	testenv.RequireTools(t, "apt-get", "dpkg-deb", "flock", "go")
	out := t.TempDir()
	start := time.Now()
	cmd := exec.Command("bash", "../../hack/image.sh", "--arch", "amd64", "--out", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/image.sh: %v\n%s%s", err, stdout, stderr.String())
	}
	t.Logf("hack/image.sh --arch amd64 took %v:\n%s", time.Since(start).Round(time.Second), stdout)
	c, err := ociimage.Read(filepath.Join(out, "kubectl-svcproxy.oci.tar"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestImage(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireTools(t, "unshare", "chroot")
	c := buildImage(t)
	if c.RefName != "registry.local/kubectl-svcproxy:dev" || len(c.Images) != 1 || c.Images[0].Platform != amd64 {
		t.Fatalf("archive: ref %q, images %v", c.RefName, c.Images)
	}
	img := c.Images[0]
	if want := []string{"/usr/local/bin/kubectl-svcproxy"}; !slices.Equal(img.Entrypoint, want) || len(img.Cmd) != 0 {
		t.Errorf("entrypoint %q cmd %q, want %q and none", img.Entrypoint, img.Cmd, want)
	}
	if !slices.Contains(img.Env, imagePath) {
		t.Errorf("env %q lacks %s", img.Env, imagePath)
	}
	if img.User != "" {
		t.Errorf("user %q, want root (deployed privileged, as kube-proxy)", img.User)
	}
	root := t.TempDir()
	if err := c.Unpack(amd64, root); err != nil {
		t.Fatal(err)
	}
	checkStaticBinary(t, filepath.Join(root, "usr/local/bin/kubectl-svcproxy"), elf.EM_X86_64)
	checkFiles(t, root)
	t.Run("run", func(t *testing.T) { runInRoot(t, root) })
}

// checkStaticBinary fails unless path is an executable of machine with no
// program interpreter and no dynamic section.
func checkStaticBinary(t *testing.T, path string, machine elf.Machine) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != machine {
		t.Errorf("%s: machine %v, want %v", path, f.Machine, machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s is dynamically linked (%v)", path, p.Type)
		}
	}
}

// checkFiles checks the programs the tool runs, and the ones kube-proxy's
// image has for operators, and that nftables' nft and the docs are not
// there.
func checkFiles(t *testing.T, root string) {
	t.Helper()
	var want []string
	for _, tool := range []string{"iptables", "ip6tables"} {
		for _, b := range []string{"legacy", "nft"} {
			for _, what := range []string{"", "-save", "-restore"} {
				want = append(want, "usr/sbin/"+tool+"-"+b+what)
			}
		}
	}
	want = append(want, "usr/sbin/ipset", "usr/sbin/conntrack", "bin/cat")
	for _, p := range want {
		if !executableIn(root, p) {
			t.Errorf("/%s is not an executable file in the image", p)
		}
	}
	for _, p := range []string{"etc/protocols", "etc/services", "etc/passwd", "etc/os-release"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("/%s: %v", p, err)
		}
	}
	// The alternatives as Debian's postinst sets them in auto mode.
	for _, name := range []string{"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore"} {
		link, _ := os.Readlink(filepath.Join(root, "usr/sbin", name))
		alt, _ := os.Readlink(filepath.Join(root, "etc/alternatives", name))
		nft := strings.Replace(name, "tables", "tables-nft", 1)
		if link != "/etc/alternatives/"+name || alt != "/usr/sbin/"+nft {
			t.Errorf("/usr/sbin/%s -> %q -> %q, want /etc/alternatives/%s -> /usr/sbin/%s", name, link, alt, name, nft)
		}
	}
	for _, p := range []string{"usr/sbin/nft", "usr/share/doc", "usr/share/man", "usr/share/locale"} {
		if _, err := os.Lstat(filepath.Join(root, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("/%s is in the image (%v)", p, err)
		}
	}
}

// executableIn reports whether p, resolved inside root (absolute links
// taken as relative to root), is an executable regular file.
func executableIn(root, p string) bool {
	for range 10 {
		fi, err := os.Lstat(filepath.Join(root, p))
		if err != nil {
			return false
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			return fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
		}
		target, err := os.Readlink(filepath.Join(root, p))
		if err != nil {
			return false
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		p = strings.TrimPrefix(filepath.Clean("/"+target), "/")
	}
	return false
}
