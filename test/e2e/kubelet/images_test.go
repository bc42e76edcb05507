package kubelet

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/kubeletlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/ociimage"
)

// The test's own images, built from test/kubeletlab/agent: no
// registry is reachable, so the sandbox (pause) image too. Their tags are
// not "latest", so kubelet never tries to pull them.
const (
	pauseImage = "kubeletlab.local/pause:1"
	agentImage = "kubeletlab.local/agent:1"
	// agentPath is the agent in both images.
	agentPath = "/agent"
)

// images is what buildImages made.
type images struct {
	agent    string // the agent binary, for the node and outside namespaces
	archives []string
}

// buildImages builds the agent statically and writes the pause and agent
// images (one layer holding /agent) as OCI archives.
func buildImages(t *testing.T, dir string) images {
	t.Helper()
	agent := kubeletlab.GoBuild(t, dir, "github.com/kubectl-svcproxy/kubectl-svcproxy/test/kubeletlab/agent")
	data, err := os.ReadFile(agent)
	if err != nil {
		t.Fatal(err)
	}
	layer := ociimage.Layer{Files: []ociimage.File{{Path: agentPath, Mode: 0o755, Data: data}}}
	platform := ociimage.Platform{OS: "linux", Architecture: runtime.GOARCH}
	im := images{agent: agent}
	for _, img := range []struct {
		ref  string
		args []string
	}{
		{pauseImage, []string{"pause"}},
		{agentImage, []string{"serve"}},
	} {
		path := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(img.ref)+".tar")
		_, err := ociimage.WriteArchive(path, img.ref, ociimage.Image{
			Platform:   platform,
			Layers:     []ociimage.Layer{layer},
			Entrypoint: []string{agentPath},
			Cmd:        img.args,
		})
		if err != nil {
			t.Fatalf("image %s: %v", img.ref, err)
		}
		im.archives = append(im.archives, path)
	}
	return im
}
