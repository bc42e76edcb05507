package ociimage_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/ociimage"
)

// A one-file test image for this machine: a static server binary as the
// entrypoint. `ctr -n k8s.io images import server.tar` or `podman load -i
// server.tar` then knows it as registry.local/server:test.
func ExampleWriteArchive() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	server := []byte("\x7fELF...") // the bytes of a static binary, e.g. from go build
	a, err := ociimage.WriteArchive(filepath.Join(dir, "server.tar"), "registry.local/server:test", ociimage.Image{
		Platform:   ociimage.Platform{OS: "linux", Architecture: "amd64"}, // or ociimage.HostPlatform()
		Layers:     []ociimage.Layer{{Files: []ociimage.File{{Path: "server", Mode: 0o755, Data: server}}}},
		Entrypoint: []string{"/server"},
		Cmd:        []string{"--port=8080"},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(a.Images), a.Images[0].Platform)
	// Output: 1 linux/amd64
}
