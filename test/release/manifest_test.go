// Package release checks the release configuration: that .goreleaser.yaml
// and the krew manifest deploy/krew/svcproxy.yaml name the same platforms,
// archives and files, and, when hack/release-snapshot.sh runs it, that a
// snapshot release makes exactly the archives the manifest points at. It
// has only tests.
package release

import (
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const (
	goreleaserConfig = "../../.goreleaser.yaml"
	krewManifest     = "../../deploy/krew/svcproxy.yaml"
)

// goreleaser is the part of .goreleaser.yaml the manifest depends on.
type goreleaser struct {
	ProjectName string `json:"project_name"`
	Builds      []struct {
		Binary string
		Goos   []string
		Goarch []string
		Ignore []struct{ Goos, Goarch string }
	}
	Archives []struct {
		Formats         []string
		FormatOverrides []struct {
			Goos    string
			Formats []string
		} `json:"format_overrides"`
		NameTemplate string `json:"name_template"`
		Files        []any
	}
}

// platform is one entry of the krew manifest.
type platform struct {
	Selector struct{ MatchLabels map[string]string }
	URI      string
	Bin      string
	Files    []struct{ From, To string }
}

func (p platform) os() string   { return p.Selector.MatchLabels["os"] }
func (p platform) arch() string { return p.Selector.MatchLabels["arch"] }

func readYAML(t *testing.T, file string, v any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

func readConfigs(t *testing.T) (*goreleaser, []platform) {
	t.Helper()
	var g goreleaser
	readYAML(t, goreleaserConfig, &g)
	if len(g.Builds) != 1 || len(g.Archives) != 1 {
		t.Fatalf(".goreleaser.yaml: %d builds and %d archives, want one of each", len(g.Builds), len(g.Archives))
	}
	var m struct {
		Spec struct{ Platforms []platform }
	}
	readYAML(t, krewManifest, &m)
	return &g, m.Spec.Platforms
}

// targets are goreleaser's os/arch pairs, in its goos-major order.
func (g *goreleaser) targets() []string {
	b := g.Builds[0]
	var out []string
	for _, goos := range b.Goos {
		for _, arch := range b.Goarch {
			if !slices.ContainsFunc(b.Ignore, func(i struct{ Goos, Goarch string }) bool { return i.Goos == goos && i.Goarch == arch }) {
				out = append(out, goos+"/"+arch)
			}
		}
	}
	return out
}

// archiveName is the archive goreleaser names for a platform and version,
// by the one name template both files follow.
func (g *goreleaser) archiveName(goos, arch, version string) string {
	a := g.Archives[0]
	format := a.Formats[0]
	for _, o := range a.FormatOverrides {
		if o.Goos == goos {
			format = o.Formats[0]
		}
	}
	return g.ProjectName + "_" + version + "_" + goos + "_" + arch + "." + format
}

// binary is the name of the binary in a platform's archive.
func (g *goreleaser) binary(goos string) string {
	if goos == "windows" {
		return g.Builds[0].Binary + ".exe"
	}
	return g.Builds[0].Binary
}

// The manifest lists every platform goreleaser builds, each pointing at
// the archive goreleaser names for it, with its binary and files.
func TestManifestMatchesGoreleaser(t *testing.T) {
	g, platforms := readConfigs(t)
	const template = "{{ .ProjectName }}_{{ .Version }}_{{ .Os }}_{{ .Arch }}"
	if got := g.Archives[0].NameTemplate; got != template {
		t.Fatalf("archive name_template %q: archiveName (and the manifest's uris) follow %q", got, template)
	}
	var listed []string
	for _, p := range platforms {
		listed = append(listed, p.os()+"/"+p.arch())
		if want := g.archiveName(p.os(), p.arch(), "VERSION"); path.Base(p.URI) != want {
			t.Errorf("%s/%s: uri %s, want .../%s", p.os(), p.arch(), p.URI, want)
		}
		if want := g.binary(p.os()); p.Bin != want {
			t.Errorf("%s/%s: bin %q, want %q", p.os(), p.arch(), p.Bin, want)
		}
		var from []string
		for _, f := range p.Files {
			from = append(from, f.From)
		}
		if want := archiveFiles(t, g, p.os()); !equalSets(from, want) {
			t.Errorf("%s/%s: files %v, but the archive holds %v", p.os(), p.arch(), from, want)
		}
	}
	if want := g.targets(); !slices.Equal(listed, want) {
		t.Errorf("manifest platforms %v, goreleaser builds %v", listed, want)
	}
}

// archiveFiles is what goreleaser puts in a platform's archive: the
// binary and the files of the archive section, all at the top level.
func archiveFiles(t *testing.T, g *goreleaser, goos string) []string {
	t.Helper()
	out := []string{g.binary(goos)}
	for _, f := range g.Archives[0].Files {
		switch f := f.(type) {
		case string:
			out = append(out, path.Base(f))
		case map[string]any:
			src, _ := f["src"].(string)
			if f["dst"] != "." || f["strip_parent"] != true {
				t.Errorf("archive file %v: want dst . and strip_parent, so that it sits at the top", f)
			}
			out = append(out, path.Base(src))
		default:
			t.Errorf("archive file %v: neither a path nor a src/dst entry", f)
		}
	}
	return out
}

func equalSets(a, b []string) bool {
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(a, b)
}

// The files the manifest copies exist in the repository to be archived.
func TestArchivedFilesExist(t *testing.T) {
	for _, f := range []string{"LICENSE", "README.md", "deploy/kubectl_complete-svcproxy"} {
		if data, err := os.ReadFile("../../" + f); err != nil || len(data) == 0 {
			t.Errorf("%s: %v (%d bytes)", f, err, len(data))
		}
	}
	data, _ := os.ReadFile("../../LICENSE")
	if !strings.Contains(string(data), "Apache License\n                           Version 2.0, January 2004") {
		t.Error("LICENSE is not the Apache License 2.0")
	}
}
