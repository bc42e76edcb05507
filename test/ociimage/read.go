package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Contents is what an archive written by WriteArchive holds: the name
// and, per platform, the config (Image with no Layers) and the layers'
// digests.
type Contents struct {
	RefName string
	Images  []Image
	Layers  map[Platform][]string // "sha256:..." bottom first
	blobs   map[string][]byte     // by digest
}

// Read reads an archive that WriteArchive wrote (index.json naming one
// index of single-platform images). It keeps the archive in memory.
func Read(archive string) (*Contents, error) {
	files, err := readTar(archive)
	if err != nil {
		return nil, err
	}
	c := &Contents{Layers: map[Platform][]string{}, blobs: map[string][]byte{}}
	for name, data := range files {
		if hex, ok := strings.CutPrefix(name, "blobs/sha256/"); ok {
			c.blobs["sha256:"+hex] = data
		}
	}
	top, err := v1.ParseIndexManifest(bytes.NewReader(files["index.json"]))
	if err != nil {
		return nil, fmt.Errorf("%s: index.json: %w", archive, err)
	}
	if len(top.Manifests) != 1 {
		return nil, fmt.Errorf("%s: index.json lists %d manifests, want 1", archive, len(top.Manifests))
	}
	c.RefName = top.Manifests[0].Annotations[AnnotationRefName]
	idx, err := v1.ParseIndexManifest(bytes.NewReader(c.blobs[top.Manifests[0].Digest.String()]))
	if err != nil {
		return nil, fmt.Errorf("%s: the image index: %w", archive, err)
	}
	for _, d := range idx.Manifests {
		if err := c.addImage(d); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", archive, d.Digest, err)
		}
	}
	return c, nil
}

func (c *Contents) addImage(d v1.Descriptor) error {
	m, err := v1.ParseManifest(bytes.NewReader(c.blobs[d.Digest.String()]))
	if err != nil {
		return err
	}
	cfg, err := v1.ParseConfigFile(bytes.NewReader(c.blobs[m.Config.Digest.String()]))
	if err != nil {
		return err
	}
	p := Platform{OS: cfg.OS, Architecture: cfg.Architecture, Variant: cfg.Variant}
	if d.Platform == nil || !d.Platform.Equals(*ggcrPlatform(p)) {
		return fmt.Errorf("the index's platform %v is not the config's %s", d.Platform, p)
	}
	c.Images = append(c.Images, Image{
		Platform: p, Entrypoint: cfg.Config.Entrypoint, Cmd: cfg.Config.Cmd, Env: cfg.Config.Env,
		WorkingDir: cfg.Config.WorkingDir, User: cfg.Config.User, Labels: cfg.Config.Labels,
		Created: cfg.Created.Time,
	})
	for _, l := range m.Layers {
		c.Layers[p] = append(c.Layers[p], l.Digest.String())
	}
	return nil
}

// LayerTar returns the uncompressed tar of the layer with that digest.
func (c *Contents) LayerTar(digest string) ([]byte, error) {
	blob, ok := c.blobs[digest]
	if !ok {
		return nil, fmt.Errorf("no blob %s", digest)
	}
	zr, err := gzip.NewReader(bytes.NewReader(blob))
	if err != nil {
		return nil, fmt.Errorf("layer %s: %w", digest, err)
	}
	return io.ReadAll(zr)
}

// Unpack extracts the layers of the platform's image into dir, which
// must exist. It refuses entries that leave dir or pass through a
// symbolic link, and does not apply whiteouts (WriteArchive writes none).
// Owners are not set: the files belong to the caller.
func (c *Contents) Unpack(p Platform, dir string) error {
	layers, ok := c.Layers[p]
	if !ok {
		return fmt.Errorf("no image for %s", p)
	}
	for _, digest := range layers {
		data, err := c.LayerTar(digest)
		if err != nil {
			return err
		}
		if err := extract(data, dir); err != nil {
			return fmt.Errorf("layer %s: %w", digest, err)
		}
	}
	return nil
}

func extract(data []byte, dir string) error {
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		target, err := safeTarget(dir, h.Name)
		if err != nil {
			return err
		}
		if err := extractEntry(tr, h, dir, target); err != nil {
			return fmt.Errorf("%s: %w", h.Name, err)
		}
	}
}

// safeTarget returns name's path under dir, if no parent of it is a
// symbolic link and it does not climb out.
func safeTarget(dir, name string) (string, error) {
	clean := path.Clean("/" + name)
	if clean == "/" || slices.Contains(strings.Split(name, "/"), "..") {
		return "", fmt.Errorf("entry %q is the root or climbs out of it", name)
	}
	parts := strings.Split(clean[1:], "/")
	p := dir
	for _, part := range parts[:len(parts)-1] {
		p = filepath.Join(p, part)
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return "", fmt.Errorf("entry %q passes through the symbolic link %s", name, p)
		}
	}
	return filepath.Join(dir, filepath.FromSlash(clean[1:])), nil
}

func extractEntry(r io.Reader, h *tar.Header, dir, target string) error {
	mode := os.FileMode(h.Mode).Perm()
	if h.Mode&0o4000 != 0 {
		mode |= os.ModeSetuid
	}
	if h.Mode&0o2000 != 0 {
		mode |= os.ModeSetgid
	}
	if h.Mode&0o1000 != 0 {
		mode |= os.ModeSticky
	}
	switch h.Typeflag {
	case tar.TypeDir:
		if err := os.MkdirAll(target, 0o755); err != nil {
			return err
		}
		return os.Chmod(target, mode)
	case tar.TypeSymlink:
		return os.Symlink(h.Linkname, target)
	case tar.TypeLink:
		src, err := safeTarget(dir, h.Linkname)
		if err != nil {
			return err
		}
		return os.Link(src, target)
	case tar.TypeReg:
		f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, r)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		return os.Chmod(target, mode)
	}
	return fmt.Errorf("unsupported entry type %q", h.Typeflag)
}

// readTar reads every regular file of a tar into memory.
func readTar(name string) (map[string][]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", name, h.Name, err)
		}
		files[path.Clean(h.Name)] = data
	}
}
