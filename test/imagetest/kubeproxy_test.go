package imagetest

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/deploykit"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/ociimage"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// wrapped are the names hack/kube-proxy-image.sh points at its
// iptables-wrapper.
var wrapped = []string{"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore"}

// TestKubeProxyImage builds hack/kube-proxy-image.sh's image, reads it
// back, and runs its programs chrooted in namespaces of their own, as
// TestImage does: kube-proxy, nft, ipset, conntrack, kmod, and the iptables
// wrapper's choice of backend on nodes that hold different rules.
// test/e2e/kubelet's TestKubeProxySwitch runs the image on a kubelet.
func TestKubeProxyImage(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireTools(t, "unshare", "chroot", "apt-get", "dpkg-deb", "flock", "go")
	c, err := ociimage.Read(deploykit.KubeProxyImage(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	platform := ociimage.Platform{OS: "linux", Architecture: runtime.GOARCH}
	if c.RefName != deploykit.KubeProxyRef || len(c.Images) != 1 || c.Images[0].Platform != platform {
		t.Fatalf("archive: ref %q, images %v", c.RefName, c.Images)
	}
	if want := []string{"/usr/local/bin/kube-proxy"}; !slices.Equal(c.Images[0].Entrypoint, want) {
		t.Errorf("entrypoint %q, want %q", c.Images[0].Entrypoint, want)
	}
	root := t.TempDir()
	if err := c.Unpack(platform, root); err != nil {
		t.Fatal(err)
	}
	steps := inRoot(t, root,
		[]string{"kube-proxy", "--version"},
		[]string{"nft", "list", "ruleset"},
		[]string{"ipset", "list"},
		[]string{"conntrack", "--version"},
		[]string{"modprobe", "--version"},
		[]string{"iptables-legacy-save"},
		[]string{"ip6tables-nft-save"},
	)
	for _, s := range steps {
		if s.code != 0 {
			t.Error(s)
		}
	}
	if !strings.HasPrefix(steps[0].out, "Kubernetes v") {
		t.Errorf("kube-proxy --version: %s", steps[0])
	}
	t.Run("wrapper", func(t *testing.T) { checkWrapper(t, root) })
}

// checkWrapper runs the wrapper on nodes whose rules say which backend is
// theirs: kubelet's hint chain first, then the count of rules, then
// nf_tables on an empty node. Each case starts from the image's links,
// in a network namespace of its own.
func checkWrapper(t *testing.T, root string) {
	for _, c := range []struct {
		name  string
		setup [][]string
		want  string
	}{
		{"empty node", nil, "nft"},
		{"kubelet's hint in legacy", [][]string{{"iptables-legacy", "-t", "mangle", "-N", "KUBE-IPTABLES-HINT"}}, "legacy"},
		{"more rules in legacy", [][]string{
			{"iptables-legacy", "-A", "INPUT", "-j", "ACCEPT"}, {"ip6tables-legacy", "-A", "INPUT", "-j", "ACCEPT"},
			{"iptables-nft", "-A", "INPUT", "-j", "ACCEPT"},
		}, "legacy"},
		{"kubelet's hint in nft, more rules in legacy", [][]string{
			{"iptables-nft", "-t", "mangle", "-N", "KUBE-IPTABLES-HINT"},
			{"iptables-legacy", "-A", "INPUT", "-j", "ACCEPT"}, {"iptables-legacy", "-A", "INPUT", "-j", "ACCEPT"},
		}, "nft"},
	} {
		for _, name := range wrapped {
			link := filepath.Join(root, "usr/sbin", name)
			if err := os.Remove(link); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("iptables-wrapper", link); err != nil {
				t.Fatal(err)
			}
		}
		steps := inRoot(t, root, append(c.setup, []string{"ip6tables-save"}, []string{"iptables", "-V"})...)
		version := map[string]string{"nft": "(nf_tables)", "legacy": "(legacy)"}[c.want]
		if last := steps[len(steps)-1]; last.code != 0 || !strings.Contains(last.out, version) {
			t.Errorf("%s: want %s: %s", c.name, c.want, last)
		}
		if save := steps[len(steps)-2]; save.code != 0 {
			t.Errorf("%s: %s", c.name, save)
		}
		for _, name := range wrapped {
			want := strings.Replace(name, "tables", "tables-"+c.want, 1)
			if got, _ := os.Readlink(filepath.Join(root, "usr/sbin", name)); got != want {
				t.Errorf("%s: %s -> %q after the first call, want %q", c.name, name, got, want)
			}
		}
	}
}
