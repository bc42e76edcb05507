package ociimage

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

var (
	amd64 = Platform{OS: "linux", Architecture: "amd64"}
	arm64 = Platform{OS: "linux", Architecture: "arm64"}
)

const ref = "registry.local/test:dev"

func testImage(p Platform, layers ...Layer) Image {
	return Image{
		Platform:   p,
		Layers:     layers,
		Entrypoint: []string{"/bin/server"},
		Cmd:        []string{"--port=80"},
		Env:        []string{"PATH=/bin"},
		WorkingDir: "/srv",
		User:       "65534",
		Labels:     map[string]string{"test": p.Architecture},
	}
}

func memLayer(arch string) Layer {
	return Layer{Files: []File{
		{Path: "bin/server", Mode: 0o755, Data: []byte("server for " + arch)},
		{Path: "/etc/conf", Mode: 0o600, Data: []byte("x=1\n")},
	}}
}

func write(t *testing.T, name string, images ...Image) (string, Archive) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	a, err := WriteArchive(path, ref, images...)
	if err != nil {
		t.Fatal(err)
	}
	return path, a
}

// The same inputs give the same archive, byte for byte, even from a
// directory tree made again at another time with another umask.
func TestWriteArchiveIsReproducible(t *testing.T) {
	tree := func() Layer {
		old := syscall.Umask(0o077)
		defer syscall.Umask(old)
		dir := t.TempDir()
		writeTree(t, dir)
		os.Chtimes(filepath.Join(dir, "usr/bin/tool"), time.Now(), time.Now().Add(time.Duration(len(dir))*time.Hour))
		return Layer{Dir: dir}
	}
	var archives [][]byte
	var digests []string
	for range 2 {
		path, a := write(t, "img.tar", testImage(amd64, tree(), memLayer("amd64")), testImage(arm64, memLayer("arm64")))
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		archives = append(archives, data)
		digests = append(digests, a.Index+" "+a.Images[0].Manifest+" "+a.Images[1].Manifest)
	}
	if digests[0] != digests[1] {
		t.Errorf("digests differ:\n%s\n%s", digests[0], digests[1])
	}
	if !bytes.Equal(archives[0], archives[1]) {
		t.Error("the two archives differ")
	}
	// A different input gives a different image.
	_, other := write(t, "img.tar", testImage(amd64, memLayer("other")), testImage(arm64, memLayer("arm64")))
	if other.Images[0].Manifest == strings.Fields(digests[0])[1] {
		t.Error("a different layer gave the same manifest digest")
	}
}

// index.json names one OCI index, annotated with the reference for podman
// and containerd, which lists one manifest per platform.
func TestWriteArchiveIndexListsEveryPlatform(t *testing.T) {
	path, a := write(t, "img.tar", testImage(amd64, memLayer("amd64")), testImage(arm64, memLayer("arm64")))
	files, err := readTar(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(files["oci-layout"]); !strings.Contains(got, `"imageLayoutVersion": "1.0.0"`) && !strings.Contains(got, `"imageLayoutVersion":"1.0.0"`) {
		t.Errorf("oci-layout = %q", got)
	}
	var top struct {
		MediaType string
		Manifests []struct {
			MediaType   string
			Digest      string
			Annotations map[string]string
		}
	}
	if err := json.Unmarshal(files["index.json"], &top); err != nil {
		t.Fatal(err)
	}
	if len(top.Manifests) != 1 {
		t.Fatalf("index.json: %d manifests, want 1: %s", len(top.Manifests), files["index.json"])
	}
	m := top.Manifests[0]
	if m.MediaType != "application/vnd.oci.image.index.v1+json" || m.Digest != a.Index {
		t.Errorf("index.json names %s %s, want the OCI index %s", m.MediaType, m.Digest, a.Index)
	}
	for _, key := range []string{AnnotationRefName, AnnotationContainerdName} {
		if m.Annotations[key] != ref {
			t.Errorf("annotation %s = %q, want %q", key, m.Annotations[key], ref)
		}
	}
	var idx struct {
		MediaType string
		Manifests []struct {
			MediaType string
			Platform  struct{ OS, Architecture string }
		}
	}
	if err := json.Unmarshal(files["blobs/sha256/"+strings.TrimPrefix(a.Index, "sha256:")], &idx); err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, d := range idx.Manifests {
		if d.MediaType != "application/vnd.oci.image.manifest.v1+json" {
			t.Errorf("manifest media type %s", d.MediaType)
		}
		platforms = append(platforms, d.Platform.OS+"/"+d.Platform.Architecture)
	}
	if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(platforms, want) {
		t.Errorf("index platforms = %v, want %v", platforms, want)
	}

	c, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.RefName != ref || len(c.Images) != 2 {
		t.Fatalf("Read: ref %q, %d images", c.RefName, len(c.Images))
	}
	got := c.Images[1]
	want := testImage(arm64)
	want.Created = Epoch
	if got.Platform != arm64 || !slices.Equal(got.Entrypoint, want.Entrypoint) || !slices.Equal(got.Cmd, want.Cmd) ||
		!slices.Equal(got.Env, want.Env) || got.WorkingDir != want.WorkingDir || got.User != want.User ||
		got.Labels["test"] != "arm64" || !got.Created.Equal(Epoch) {
		t.Errorf("config read back = %+v, want %+v", got, want)
	}
	if a.Images[1].Compressed <= 0 || a.Images[1].Uncompressed <= 0 {
		t.Errorf("sizes not reported: %+v", a.Images[1])
	}
}

type entry struct {
	name     string
	typ      byte
	mode     int64
	data     string
	linkname string
}

// layerEntries returns the platform's only layer's entries, checking the
// fields every entry shares.
func layerEntries(t *testing.T, path string, p Platform) []entry {
	t.Helper()
	c, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Layers[p]) != 1 {
		t.Fatalf("%s: %d layers, want 1", p, len(c.Layers[p]))
	}
	data, err := c.LayerTar(c.Layers[p][0])
	if err != nil {
		t.Fatal(err)
	}
	var out []entry
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || !h.ModTime.Equal(Epoch) {
			t.Errorf("%s: uid %d gid %d %q %q mtime %v, want root's, unnamed, at the epoch", h.Name, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime)
		}
		body, _ := io.ReadAll(tr)
		out = append(out, entry{h.Name, h.Typeflag, h.Mode, string(body), h.Linkname})
	}
}

func checkEntries(t *testing.T, got, want []entry) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("layer entries:\n got %+v\nwant %+v", got, want)
	}
}

// An in-memory layer holds exactly the files given, sorted, with their
// modes, parents added, links as links.
func TestFilesLayerContents(t *testing.T) {
	layer := Layer{Files: []File{
		{Path: "usr/bin/tool", Mode: 0o755 | fs.ModeSetuid, Data: []byte("#!/bin/true\n")},
		{Path: "tmp", Mode: fs.ModeDir | 0o777 | fs.ModeSticky},
		{Path: "bin/alias", HardLink: "usr/bin/tool", Mode: 0o755 | fs.ModeSetuid},
		{Path: "bin/tool", Mode: fs.ModeSymlink, Link: "../usr/bin/tool"},
		{Path: "etc/empty", Mode: 0o600},
	}}
	path, _ := write(t, "img.tar", testImage(amd64, layer))
	checkEntries(t, layerEntries(t, path, amd64), []entry{
		{"bin/", tar.TypeDir, 0o755, "", ""},
		{"bin/tool", tar.TypeSymlink, 0o777, "", "../usr/bin/tool"},
		{"etc/", tar.TypeDir, 0o755, "", ""},
		{"etc/empty", tar.TypeReg, 0o600, "", ""},
		{"tmp/", tar.TypeDir, 0o1777, "", ""},
		{"usr/", tar.TypeDir, 0o755, "", ""},
		{"usr/bin/", tar.TypeDir, 0o755, "", ""},
		{"usr/bin/tool", tar.TypeReg, 0o4755, "#!/bin/true\n", ""},
		{"bin/alias", tar.TypeLink, 0o4755, "", "usr/bin/tool"},
	})
}

// writeTree makes a small root filesystem: a setuid binary, a hard link to
// it, absolute and relative symbolic links, a restricted directory.
func writeTree(t *testing.T, dir string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "usr/bin"), 0o755))
	must(os.MkdirAll(filepath.Join(dir, "usr/sbin"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "usr/bin/tool"), []byte("tool"), 0o755))
	must(os.Chmod(filepath.Join(dir, "usr/bin/tool"), 0o755|fs.ModeSetuid))
	must(os.Link(filepath.Join(dir, "usr/bin/tool"), filepath.Join(dir, "usr/sbin/tool-link")))
	must(os.Symlink("usr/bin", filepath.Join(dir, "bin")))
	must(os.Symlink("/usr/bin/tool", filepath.Join(dir, "usr/sbin/abs")))
	must(os.Mkdir(filepath.Join(dir, "root"), 0o700))
	must(os.Chmod(filepath.Join(dir, "root"), 0o700))
}

// A directory layer keeps symbolic links, hard links and modes.
func TestDirLayerPreservesLinksAndModes(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir)
	path, _ := write(t, "img.tar", testImage(amd64, Layer{Dir: dir}))
	checkEntries(t, layerEntries(t, path, amd64), []entry{
		{"bin", tar.TypeSymlink, 0o777, "", "usr/bin"},
		{"root/", tar.TypeDir, 0o700, "", ""},
		{"usr/", tar.TypeDir, 0o755, "", ""},
		{"usr/bin/", tar.TypeDir, 0o755, "", ""},
		{"usr/bin/tool", tar.TypeReg, 0o4755, "tool", ""},
		{"usr/sbin/", tar.TypeDir, 0o755, "", ""},
		{"usr/sbin/abs", tar.TypeSymlink, 0o777, "", "/usr/bin/tool"},
		{"usr/sbin/tool-link", tar.TypeLink, 0o4755, "", "usr/bin/tool"},
	})

	// Unpack gives the tree back.
	c, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := c.Unpack(amd64, out); err != nil {
		t.Fatal(err)
	}
	a, err := os.Stat(filepath.Join(out, "usr/bin/tool"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.Stat(filepath.Join(out, "usr/sbin/tool-link"))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(a, b) || a.Mode() != 0o755|fs.ModeSetuid {
		t.Errorf("unpacked tool: mode %v, hard link kept: %v", a.Mode(), os.SameFile(a, b))
	}
	if l, err := os.Readlink(filepath.Join(out, "usr/sbin/abs")); err != nil || l != "/usr/bin/tool" {
		t.Errorf("unpacked usr/sbin/abs -> %q, %v", l, err)
	}
}

// What the package cannot write faithfully is an error, not a silent
// change.
func TestWriteArchiveRefusesWhatItCannotWrite(t *testing.T) {
	fifoDir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(fifoDir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string][]Image{
		"no images":          nil,
		"a pipe in a tree":   {testImage(amd64, Layer{Dir: fifoDir})},
		"two for a platform": {testImage(amd64, memLayer("a")), testImage(amd64, memLayer("b"))},
		"Dir and Files":      {testImage(amd64, Layer{Dir: fifoDir, Files: []File{{Path: "x"}}})},
		"a path twice":       {testImage(amd64, Layer{Files: []File{{Path: "x"}, {Path: "/x"}}})},
		"the root":           {testImage(amd64, Layer{Files: []File{{Path: "/", Mode: fs.ModeDir}}})},
		"a dangling link":    {testImage(amd64, Layer{Files: []File{{Path: "x", HardLink: "y"}}})},
		"a device":           {testImage(amd64, Layer{Files: []File{{Path: "dev/null", Mode: fs.ModeDevice}}})},
	}
	for name, images := range cases {
		path := filepath.Join(t.TempDir(), "img.tar")
		if _, err := WriteArchive(path, ref, images...); err == nil {
			t.Errorf("%s: no error", name)
		} else if _, statErr := os.Stat(path); statErr == nil {
			t.Errorf("%s: %v, but the archive was written", name, err)
		}
	}
}

// Unpack refuses entries that would write outside its directory.
func TestUnpackStaysInside(t *testing.T) {
	for name, headers := range map[string][]tar.Header{
		"climbing":        {{Name: "a/../../x", Typeflag: tar.TypeReg}},
		"through a link":  {{Name: "escape", Typeflag: tar.TypeSymlink, Linkname: "/"}, {Name: "escape/tmp/x", Typeflag: tar.TypeReg}},
		"a hard link out": {{Name: "x", Typeflag: tar.TypeLink, Linkname: "../etc/passwd"}},
		"a device":        {{Name: "null", Typeflag: tar.TypeChar}},
	} {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, h := range headers {
			if err := tw.WriteHeader(&h); err != nil {
				t.Fatal(err)
			}
		}
		tw.Close()
		outer := t.TempDir()
		dir := filepath.Join(outer, "root")
		os.Mkdir(dir, 0o755)
		if err := extract(buf.Bytes(), dir); err == nil {
			t.Errorf("%s: extracted", name)
		}
		if _, err := os.Stat(filepath.Join(outer, "x")); err == nil {
			t.Errorf("%s: wrote outside", name)
		}
	}
}

func TestParsePlatform(t *testing.T) {
	for in, want := range map[string]Platform{"linux/arm64": arm64, "linux/arm/v7": {"linux", "arm", "v7"}} {
		if got, err := ParsePlatform(in); err != nil || got != want || got.String() != in {
			t.Errorf("ParsePlatform(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"linux", "/amd64", "linux/", "a/b/c/d"} {
		if _, err := ParsePlatform(in); err == nil {
			t.Errorf("ParsePlatform(%q): no error", in)
		}
	}
}
