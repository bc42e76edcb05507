// Package docs checks the repository's Markdown: every relative link
// resolves to a file, and every #anchor to a heading of the file it names,
// so that moving a section or a file cannot leave a link behind.
package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/repo"
)

// TestRelativeLinksResolve checks every relative link of every Markdown
// file in the repository.
func TestRelativeLinksResolve(t *testing.T) {
	root := repo.MustRoot(t)
	files := markdownFiles(t, root)
	if len(files) == 0 {
		t.Fatal("no Markdown files found")
	}
	anchors := map[string]map[string]bool{}
	links := map[string][]link{}
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		links[f], anchors[f] = scan(string(text))
	}
	// The README alone links to a dozen docs: finding none means the
	// scanner is broken, not that the links are fine.
	if n := len(links[filepath.Join(root, "README.md")]); n < 10 {
		t.Fatalf("README.md: %d relative links found, want at least 10", n)
	}
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		for _, l := range links[f] {
			target := f
			if l.target != "" {
				target = filepath.Join(filepath.Dir(f), filepath.FromSlash(l.target))
			}
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s:%d: link to %s: no such file", rel, l.line, l.target)
				continue
			}
			if l.anchor == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			if !anchors[target][l.anchor] {
				t.Errorf("%s:%d: link to %s#%s: no such heading", rel, l.line, l.target, l.anchor)
			}
		}
	}
}

// markdownFiles lists the repository's Markdown files, leaving out
// hidden directories and the build caches (_cache, dist).
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "dist") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestSlugify holds the anchors to GitHub's, for the kinds of heading the
// docs have.
func TestSlugify(t *testing.T) {
	for h, want := range map[string]string{
		"Watch mode: `apply --watch`":              "watch-mode-apply---watch",
		"The JSON contract (`-o json`, `-o yaml`)": "the-json-contract--o-json--o-yaml",
		"kube-proxy's flag names":                  "kube-proxys-flag-names",
		"kubectl svcproxy apply":                   "kubectl-svcproxy-apply",
		"The data plane, mode by mode":             "the-data-plane-mode-by-mode",
		"Input: the cluster or a file":             "input-the-cluster-or-a-file",
		"See [the docs](docs/USAGE.md)":            "see-the-docs",
	} {
		if got := slugify(h); got != want {
			t.Errorf("slugify(%q) = %q, want %q", h, got, want)
		}
	}
}
