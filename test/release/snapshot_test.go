package release

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// goreleaserBinary is where hack/release-snapshot.sh build puts goreleaser,
// of the version the script pins.
func goreleaserBinary(t *testing.T) string {
	t.Helper()
	script, err := os.ReadFile("../../hack/release-snapshot.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(script), "\n") {
		if v, ok := strings.CutPrefix(line, "version="); ok {
			bin, err := filepath.Abs("../../_cache/tools/goreleaser-" + v + "/goreleaser")
			if err != nil {
				t.Fatal(err)
			}
			return bin
		}
	}
	t.Fatal("hack/release-snapshot.sh pins no version=")
	return ""
}

// TestSnapshotRelease runs a goreleaser snapshot into a temporary
// directory and checks that each platform of the krew manifest has its
// archive, named as the uri says, holding exactly the manifest's files
// (the binary with its platform's name, LICENSE, README.md and the
// completion script) at the top level. It is opt-in, with
// SVCPROXY_RELEASE_SNAPSHOT=1, which hack/release-snapshot.sh sets: building
// goreleaser and five targets from empty caches costs CI more than its
// 60-minute budget allows, while the cheap checks of the configuration
// (manifest_test.go) run everywhere.
func TestSnapshotRelease(t *testing.T) {
	if os.Getenv("SVCPROXY_RELEASE_SNAPSHOT") != "1" {
		// Opt-in, not a missing prerequisite: a plain skip, also under CI.
		t.Skip("opt-in: hack/release-snapshot.sh runs the snapshot release (SVCPROXY_RELEASE_SNAPSHOT=1)")
	}
	bin := goreleaserBinary(t)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("goreleaser is not built (run hack/release-snapshot.sh build): %v", err)
	}
	testenv.RequireTools(t, "git")
	g, platforms := readConfigs(t)
	dist := snapshot(t, bin)
	var meta struct{ Version string }
	readJSON(t, filepath.Join(dist, "metadata.json"), &meta)
	var artifacts []struct{ Name, Path, Goos, Goarch, Type string }
	readJSON(t, filepath.Join(dist, "artifacts.json"), &artifacts)
	archives := map[string]string{}
	for _, a := range artifacts {
		if a.Type == "Archive" {
			archives[a.Goos+"/"+a.Goarch] = a.Name
		}
	}
	if len(archives) != len(platforms) {
		t.Errorf("%d archives %v for %d krew platforms", len(archives), archives, len(platforms))
	}
	for _, p := range platforms {
		want := g.archiveName(p.os(), p.arch(), meta.Version)
		if got := archives[p.os()+"/"+p.arch()]; got != want {
			t.Errorf("%s/%s: archive %q, want %q", p.os(), p.arch(), got, want)
			continue
		}
		names := archiveEntries(t, filepath.Join(dist, want))
		var from []string
		for _, f := range p.Files {
			from = append(from, f.From)
		}
		if !equalSets(names, from) {
			t.Errorf("%s holds %v; the manifest copies %v", want, names, from)
		}
	}
	if _, err := os.Stat(filepath.Join(dist, "checksums.txt")); err != nil {
		t.Error(err)
	}
}

// snapshot runs goreleaser on the repository with the dist directory in
// a temporary directory, and returns it.
func snapshot(t *testing.T, bin string) string {
	t.Helper()
	config, err := os.ReadFile(goreleaserConfig)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	dist := filepath.Join(tmp, "dist")
	cfg := filepath.Join(tmp, "goreleaser.yaml")
	if err := os.WriteFile(cfg, append(config, []byte("\ndist: "+dist+"\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"check", "--config", cfg}, {"release", "--snapshot", "--clean", "--skip=publish", "--config", cfg}} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("goreleaser %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return dist
}

func readJSON(t *testing.T, file string, v any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// archiveEntries lists a .tar.gz or .zip archive's files; a binary or
// script that is not executable is an error (krew runs them as they are).
func archiveEntries(t *testing.T, file string) []string {
	t.Helper()
	if strings.HasSuffix(file, ".zip") {
		r, err := zip.OpenReader(file)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var names []string
		for _, f := range r.File {
			names = append(names, f.Name)
		}
		return names
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for tr := tar.NewReader(gz); ; {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		} else if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		names = append(names, h.Name)
		if (h.Name == "kubectl-svcproxy" || h.Name == "kubectl_complete-svcproxy") && h.Mode&0o111 == 0 {
			t.Errorf("%s: %s is not executable (mode %o)", file, h.Name, h.Mode)
		}
	}
}
