package ociimage

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The annotations that name the image on import: the OCI one (podman
// reads it) and containerd's.
const (
	AnnotationRefName        = "org.opencontainers.image.ref.name"
	AnnotationContainerdName = "io.containerd.image.name"
)

// Written describes one platform's image in a written archive.
type Written struct {
	Platform Platform
	// Manifest is the image manifest's digest, "sha256:...".
	Manifest string
	// Compressed is the size of the manifest, config and gzip'd layers:
	// what a registry would serve. Uncompressed is the layers' tar size,
	// about what the unpacked root filesystem takes.
	Compressed, Uncompressed int64
}

// Archive describes a written archive.
type Archive struct {
	// Index is the digest of the multi-platform index that index.json
	// names.
	Index  string
	Images []Written
}

// WriteArchive writes the images, one per platform, to path as an OCI
// image layout in a tar file: index.json names one image index, annotated
// with refName (e.g. "registry.local/kubectl-svcproxy:dev"), which lists a
// manifest per image. The file is replaced atomically.
func WriteArchive(path, refName string, images ...Image) (Archive, error) {
	if len(images) == 0 {
		return Archive{}, fmt.Errorf("ociimage: no images to write")
	}
	if refName == "" {
		return Archive{}, fmt.Errorf("ociimage: no reference name")
	}
	seen := map[Platform]bool{}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var out Archive
	for _, img := range images {
		if seen[img.Platform] {
			return Archive{}, fmt.Errorf("ociimage: two images for %s", img.Platform)
		}
		seen[img.Platform] = true
		built, w, err := build(img)
		if err != nil {
			return Archive{}, fmt.Errorf("ociimage: %s: %w", img.Platform, err)
		}
		out.Images = append(out.Images, w)
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        built,
			Descriptor: v1.Descriptor{Platform: ggcrPlatform(img.Platform)},
		})
	}
	digest, err := idx.Digest()
	if err != nil {
		return Archive{}, err
	}
	out.Index = digest.String()
	top := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), mutate.IndexAddendum{
		Add: idx,
		Descriptor: v1.Descriptor{Annotations: map[string]string{
			AnnotationRefName:        refName,
			AnnotationContainerdName: refName,
		}},
	})
	return out, writeLayoutTar(path, top)
}

func ggcrPlatform(p Platform) *v1.Platform {
	return &v1.Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant}
}

// build makes one platform's image.
func build(img Image) (v1.Image, Written, error) {
	w := Written{Platform: img.Platform}
	created := img.created()
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	base, err := mutate.ConfigFile(base, &v1.ConfigFile{
		Architecture: img.Platform.Architecture,
		OS:           img.Platform.OS,
		Variant:      img.Platform.Variant,
		Created:      v1.Time{Time: created},
		RootFS:       v1.RootFS{Type: "layers"},
		Config: v1.Config{
			Entrypoint: img.Entrypoint,
			Cmd:        img.Cmd,
			Env:        img.Env,
			WorkingDir: img.WorkingDir,
			User:       img.User,
			Labels:     img.Labels,
		},
	})
	if err != nil {
		return nil, w, err
	}
	var adds []mutate.Addendum
	for i, l := range img.Layers {
		data, err := layerTar(l, created)
		if err != nil {
			return nil, w, err
		}
		w.Uncompressed += int64(len(data))
		layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(data)), nil
		}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestCompression), tarball.WithCompressedCaching)
		if err != nil {
			return nil, w, err
		}
		adds = append(adds, mutate.Addendum{Layer: layer, History: v1.History{
			Created:   v1.Time{Time: created},
			CreatedBy: fmt.Sprintf("ociimage layer %d", i),
		}})
	}
	out, err := mutate.Append(base, adds...)
	if err != nil {
		return nil, w, err
	}
	return out, w, sizes(out, &w)
}

// sizes fills w's manifest digest and compressed size from img.
func sizes(img v1.Image, w *Written) error {
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	w.Manifest = digest.String()
	m, err := img.Manifest()
	if err != nil {
		return err
	}
	raw, err := img.RawManifest()
	if err != nil {
		return err
	}
	w.Compressed = int64(len(raw)) + m.Config.Size
	for _, l := range m.Layers {
		w.Compressed += l.Size
	}
	return nil
}

// writeLayoutTar writes idx as an OCI layout in a scratch directory next
// to path, then tars that directory into path.
func writeLayoutTar(path string, idx v1.ImageIndex) error {
	dir, err := os.MkdirTemp(filepath.Dir(path), ".ociimage-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	layoutDir := filepath.Join(dir, "layout")
	if _, err := layout.Write(layoutDir, idx); err != nil {
		return fmt.Errorf("ociimage: writing the layout: %w", err)
	}
	tmp := filepath.Join(dir, "archive.tar")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	t := newTarWriter(f, Epoch)
	t.fixedModes = true
	err = t.addTree(layoutDir)
	if err == nil {
		err = t.tw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("ociimage: %s: %w", tmp, err)
	}
	return os.Rename(tmp, path)
}
