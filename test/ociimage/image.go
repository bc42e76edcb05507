// Package ociimage writes OCI image archives without a registry or a
// container engine: the tests and hack/image.sh describe each platform's
// image as layers (a directory tree, or files given in memory) and a
// config, and WriteArchive writes one tarball of an OCI image layout
// holding an image index with one manifest per platform.
//
// The archive is what `ctr -n k8s.io images import` (containerd) and
// `podman load` read. Its index.json has one entry, the multi-platform
// index, annotated with the reference name in both the OCI annotation
// (org.opencontainers.image.ref.name) and containerd's
// (io.containerd.image.name), so the imported image is named, e.g.
// registry.local/kubectl-svcproxy:dev.
//
// Everything is reproducible: layer entries are sorted, owned by uid and
// gid 0 with no user or group names, and stamped with one fixed time
// (Image.Created, the Unix epoch when zero); the config carries the same
// time. The same inputs give the same digests, byte for byte the same
// archive.
//
// The manifests, configs and layers are made with go-containerregistry.
// This package is for the tests and the hack tooling; the product binary
// does not import it.
package ociimage

import (
	"fmt"
	"io/fs"
	"runtime"
	"strings"
	"time"
)

// Platform names an image's operating system and CPU, as an OCI index
// does: {OS: "linux", Architecture: "arm64"}.
type Platform struct {
	OS           string
	Architecture string
	Variant      string // e.g. "v7" for linux/arm/v7; usually empty
}

// String returns the platform as os/arch[/variant].
func (p Platform) String() string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// ParsePlatform reads "os/arch" or "os/arch/variant", e.g. "linux/amd64".
func ParsePlatform(s string) (Platform, error) {
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		return Platform{}, fmt.Errorf("platform %q: want os/arch or os/arch/variant", s)
	}
	p := Platform{OS: parts[0], Architecture: parts[1]}
	if len(parts) == 3 {
		p.Variant = parts[2]
	}
	return p, nil
}

// Image is one platform's image: its layers, bottom first, and its config.
type Image struct {
	Platform   Platform
	Layers     []Layer
	Entrypoint []string
	Cmd        []string
	Env        []string // "KEY=value"
	WorkingDir string
	User       string // "uid[:gid]" or a name; empty runs as the runtime's default (root)
	Labels     map[string]string
	// Created stamps the config and every layer entry. The zero value
	// means the Unix epoch, which keeps builds reproducible.
	Created time.Time
}

// Layer is one filesystem layer: either the tree under Dir, or Files.
//
// A Dir layer holds every entry below Dir (not Dir itself) with its
// permission bits, including setuid, setgid and sticky; symbolic links
// are stored as links, and files that are hard links of each other are
// stored once, the later names as hard links to the first in walk order.
// Regular files, directories and symbolic links only: a device, socket or
// pipe is an error. Owners and times are not kept (see the package doc).
type Layer struct {
	Dir   string
	Files []File
}

// File is one entry of an in-memory layer. Missing parent directories are
// added with mode 0755.
type File struct {
	// Path is slash-separated and relative to the image's root:
	// "usr/local/bin/server". A leading "/" or "./" is ignored.
	Path string
	// Mode is the permission bits plus fs.ModeSetuid, fs.ModeSetgid and
	// fs.ModeSticky, and the type: 0 for a regular file, fs.ModeDir or
	// fs.ModeSymlink.
	Mode fs.FileMode
	// Data is a regular file's contents.
	Data []byte
	// Link is a symbolic link's target, as stored (relative or absolute).
	Link string
	// HardLink, for a regular file, makes this entry a hard link to the
	// regular file of the layer with that path; Data is then ignored.
	// Hard links are written after every other entry.
	HardLink string
}

// Epoch is the time every entry and config is stamped with when
// Image.Created is zero.
var Epoch = time.Unix(0, 0).UTC()

func (img Image) created() time.Time {
	if img.Created.IsZero() {
		return Epoch
	}
	return img.Created.UTC()
}

// HostPlatform is linux on the architecture this program was built for:
// the platform a test image for this machine needs.
func HostPlatform() Platform {
	return Platform{OS: "linux", Architecture: runtime.GOARCH}
}
