package imagetest

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/ociimage"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/repo"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// e2eImage is one image of hack/e2e-images.sh: the reference Kubernetes'
// e2e suite v1.37.2 expects (test/utils/image/manifest.go), its
// entrypoint and command, and the commands that the suite's Service, DNS
// and KubeProxy tests exec in it (test/e2e/network,
// test/e2e/framework): each must be on the image's PATH.
type e2eImage struct {
	file, ref       string
	entrypoint, cmd []string
	commands        []string
}

var e2eImages = []e2eImage{
	{"agnhost", "registry.k8s.io/e2e-test-images/agnhost:2.66.1", []string{"/agnhost"}, []string{"pause"},
		[]string{"sh", "bash", "curl", "nc", "wget", "timeout", "seq", "sleep", "date", "echo", "test", "cat",
			"grep", "tail", "dig", "nslookup", "getent", "hostname", "ip", "ss", "iperf", "socat", "ipcs", "dd", "/agnhost", "/agnhost-2"}},
	{"busybox", "registry.k8s.io/e2e-test-images/busybox:1.37.0-2", nil, []string{"sh"},
		[]string{"sh", "echo", "sleep", "nc", "wget"}},
	{"nginx", "registry.k8s.io/e2e-test-images/nginx:1.27.0-2", []string{"/docker-entrypoint.sh"}, []string{"nginx", "-g", "daemon off;"},
		[]string{"nginx"}},
	{"glibc-dns-testing", "registry.k8s.io/e2e-test-images/glibc-dns-testing:2.1.1", nil, []string{"/bin/bash"},
		[]string{"sh", "seq", "dig", "getent", "test", "echo", "sleep"}},
	{"distroless-iptables", "registry.k8s.io/build-image/distroless-iptables:v0.9.9", nil, nil,
		[]string{"sh", "sleep", "test", "cat", "grep", "which", "conntrack"}},
	{"regression-issue-74839", "registry.k8s.io/e2e-test-images/regression-issue-74839:1.5", []string{"/regression-issue-74839"}, nil, nil},
	{"pause", "registry.k8s.io/pause:3.10.2", []string{"/pause"}, nil, nil},
}

// TestE2EImages builds hack/e2e-images.sh's images into its default
// directory (an unchanged image is not written again, so a second run
// takes under a minute), reads each archive back, and runs what the e2e
// tests run in them, chrooted in namespaces of their own: the commands
// they exec, then agnhost, nginx and pause as their pods run them.
func TestE2EImages(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireTools(t, "unshare", "chroot", "apt-get", "dpkg-deb", "flock", "go")
	archives := buildE2EImages(t)
	roots := map[string]string{}
	for _, want := range e2eImages {
		root := checkE2EArchive(t, archives, want)
		if root == "" {
			continue
		}
		roots[want.file] = root
		for _, name := range want.commands {
			// The shell's command -v finds what the pod's PATH finds.
			s := inRoot(t, root, []string{"/bin/sh", "-c", "command -v " + name})
			if s[0].code != 0 {
				t.Errorf("%s lacks %s: %s", want.file, name, s[0])
			}
		}
	}
	if len(roots) == len(e2eImages) {
		t.Run("run", func(t *testing.T) { runE2EImages(t, roots) })
	}
}

// buildE2EImages runs the script and maps each archive's file name
// (without .oci.tar) to its path.
func buildE2EImages(t *testing.T) map[string]string {
	t.Helper()
	start := time.Now()
	cmd := exec.Command(filepath.Join(repo.MustRoot(t), "hack/e2e-images.sh"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/e2e-images.sh: %v\n%s", err, stderr.String())
	}
	t.Logf("hack/e2e-images.sh took %v", time.Since(start).Round(time.Second))
	archives := map[string]string{}
	for _, line := range strings.Fields(string(stdout)) {
		archives[strings.TrimSuffix(filepath.Base(line), ".oci.tar")] = line
	}
	if len(archives) != len(e2eImages) {
		t.Errorf("hack/e2e-images.sh printed %d archives, want %d:\n%s", len(archives), len(e2eImages), stdout)
	}
	return archives
}

// checkE2EArchive checks one archive's name, platform, entrypoint,
// command and label, and returns its unpacked root ("" if unusable).
func checkE2EArchive(t *testing.T, archives map[string]string, want e2eImage) string {
	t.Helper()
	path, ok := archives[want.file]
	if !ok {
		t.Errorf("no archive for %s", want.ref)
		return ""
	}
	c, err := ociimage.Read(path)
	if err != nil {
		t.Error(err)
		return ""
	}
	host := ociimage.HostPlatform()
	if c.RefName != want.ref || len(c.Images) != 1 || c.Images[0].Platform != host {
		t.Errorf("%s: ref %q, images %v; want %q for %v only", path, c.RefName, c.Images, want.ref, host)
		return ""
	}
	img := c.Images[0]
	if !slices.Equal(img.Entrypoint, want.entrypoint) || !slices.Equal(img.Cmd, want.cmd) {
		t.Errorf("%s: entrypoint %q cmd %q, want %q and %q", want.file, img.Entrypoint, img.Cmd, want.entrypoint, want.cmd)
	}
	if d := img.Labels["org.opencontainers.image.description"]; !strings.HasPrefix(d, "substitute for "+want.ref+" ") {
		t.Errorf("%s: description %q does not say it is a substitute for %s", want.file, d, want.ref)
	}
	root := t.TempDir()
	if err := c.Unpack(host, root); err != nil {
		t.Error(err)
		return ""
	}
	if len(want.entrypoint) > 0 && !executableIn(root, want.entrypoint[0]) {
		t.Errorf("%s: entrypoint %s is not an executable in the image", want.file, want.entrypoint[0])
	}
	return root
}
