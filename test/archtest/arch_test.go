package archtest

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/kubectl-svcproxy/kubectl-svcproxy/"

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
	Standard   bool
	GoFiles    []string
}

// listPackages runs go list on the module's packages.
func listPackages(t *testing.T) map[string]*pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Imports,Deps,Standard,GoFiles", module+"...")
	// The imports as Linux builds them, which docs/ARCHITECTURE.md lists:
	// elsewhere the kernel packages build their stubs (*_other.go) instead
	// of their *_linux.go files, and import less (apply/ipvs leaves out
	// apply/nsthread).
	cmd.Env = append(os.Environ(), "GOOS=linux")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v: %s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]*pkg{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs[strings.TrimPrefix(p.ImportPath, module)] = &p
	}
	return pkgs
}

// The data packages depend on nothing of the stages, and render and the
// rulesets never need the Kubernetes client libraries.
func TestDataPackagesAreLeaves(t *testing.T) {
	pkgs := listPackages(t)
	for name, p := range pkgs {
		if !strings.HasPrefix(name, "ruleset/") && name != "nodetable" {
			continue
		}
		for _, imp := range p.Imports {
			own, ok := strings.CutPrefix(imp, module)
			switch {
			case !ok && !pkgs[imp].Standard:
				t.Errorf("%s imports %s: a data package may import only the standard library", name, imp)
			case ok && own != "nodetable" && !strings.HasPrefix(own, "ruleset/"):
				t.Errorf("%s imports %s: a data package may import only nodetable and ruleset/...", name, own)
			}
		}
	}
	for _, name := range []string{"render", "nodetable", "cluster", "ruleset/iptables", "ruleset/nftables", "ruleset/ipvs", "ruleset/userspace"} {
		p := pkgs[name]
		if p == nil {
			t.Fatalf("package %s not listed", name)
		}
		if i := slices.IndexFunc(p.Deps, func(d string) bool { return strings.HasPrefix(d, "k8s.io/client-go") }); i >= 0 {
			t.Errorf("%s depends on %s", name, p.Deps[i])
		}
	}
}

// nfnl, the netlink vocabulary of the nf_tables packages, is a leaf: it
// imports the standard library and golang.org/x/sys/unix, so that
// trace/kernel can share it without reaching a stage.
func TestNetlinkVocabularyIsALeaf(t *testing.T) {
	pkgs := listPackages(t)
	p := pkgs["nfnl"]
	if p == nil {
		t.Fatal("package nfnl not listed")
	}
	for _, imp := range p.Imports {
		if dep := pkgs[imp]; imp != "golang.org/x/sys/unix" && (dep == nil || !dep.Standard) {
			t.Errorf("nfnl imports %s: it may import only the standard library and golang.org/x/sys/unix", imp)
		}
	}
}

// The trace packages are data in, data out: of the module they import
// only nodetable, the rulesets, each other and nfnl, never a stage.
func TestTraceImportsNoStage(t *testing.T) {
	for name, p := range listPackages(t) {
		if name != "trace" && !strings.HasPrefix(name, "trace/") {
			continue
		}
		for _, imp := range p.Imports {
			own, ok := strings.CutPrefix(imp, module)
			if ok && own != "nodetable" && own != "nfnl" && own != "trace" &&
				!strings.HasPrefix(own, "ruleset/") && !strings.HasPrefix(own, "trace/") {
				t.Errorf("%s imports %s: a trace package may import only nodetable, ruleset/..., trace/... and nfnl", name, own)
			}
		}
	}
}

// diff and apply receive each mode's ownership from render; they never
// import it, so they cannot decide ownership on their own.
func TestStagesDoNotImportRender(t *testing.T) {
	for name, p := range listPackages(t) {
		if name != "diff" && !strings.HasPrefix(name, "apply/") {
			continue
		}
		for _, imp := range p.Imports {
			if imp == module+"render" || imp == module+"cluster" {
				t.Errorf("%s imports %s", name, strings.TrimPrefix(imp, module))
			}
		}
	}
}

// The import list in docs/ARCHITECTURE.md is the code's: every non-test
// package of the module but test support, with exactly its imports of the
// module's packages.
func TestArchitectureDocMatchesImports(t *testing.T) {
	doc, err := os.ReadFile("../../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "```imports\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("docs/ARCHITECTURE.md has no ```imports block")
	}
	documented := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		from, to, _ := strings.Cut(line, "->")
		documented[strings.TrimSpace(from)] = strings.Join(strings.Fields(to), " ")
	}
	actual := map[string]string{}
	for name, p := range listPackages(t) {
		if !strings.HasPrefix(p.ImportPath, module) || testSupport(name) {
			continue
		}
		var own []string
		for _, imp := range p.Imports {
			if rest, ok := strings.CutPrefix(imp, module); ok {
				own = append(own, rest)
			}
		}
		slices.Sort(own)
		actual[name] = strings.Join(own, " ")
	}
	for name, imports := range actual {
		if got, ok := documented[name]; !ok {
			t.Errorf("docs/ARCHITECTURE.md does not list package %s (imports: %s)", name, imports)
		} else if got != imports {
			t.Errorf("docs/ARCHITECTURE.md: %s -> %s, but the code imports %s", name, got, imports)
		}
	}
	for name := range documented {
		if _, ok := actual[name]; !ok {
			t.Errorf("docs/ARCHITECTURE.md lists %s, which is not a package of the module", name)
		}
	}
}

// The product binary links no test support, and so none of what only the
// tests and the hack tooling need (go-containerregistry, through
// test/ociimage).
func TestBinaryLinksNoTestSupport(t *testing.T) {
	pkgs := listPackages(t)
	bin := pkgs["cmd/kubectl-svcproxy"]
	if bin == nil {
		t.Fatal("cmd/kubectl-svcproxy not listed")
	}
	for _, dep := range bin.Deps {
		own, ok := strings.CutPrefix(dep, module)
		if ok && testSupport(own) || strings.HasPrefix(dep, "github.com/google/go-containerregistry") {
			t.Errorf("cmd/kubectl-svcproxy depends on %s", dep)
		}
	}
}

// Product and test harness are apart by path alone: every package outside
// test/ is one the binary links, so a package there that only the tests
// use, or that holds only tests, belongs under test/.
func TestOnlyTestSupportIsUnlinked(t *testing.T) {
	pkgs := listPackages(t)
	bin := pkgs["cmd/kubectl-svcproxy"]
	if bin == nil {
		t.Fatal("cmd/kubectl-svcproxy not listed")
	}
	linked := map[string]bool{"cmd/kubectl-svcproxy": true}
	for _, dep := range bin.Deps {
		if own, ok := strings.CutPrefix(dep, module); ok {
			linked[own] = true
		}
	}
	for name, p := range pkgs {
		if !strings.HasPrefix(p.ImportPath, module) || testSupport(name) || linked[name] {
			continue
		}
		if len(p.GoFiles) == 0 {
			t.Errorf("%s holds only tests: an end-to-end suite belongs under test/", name)
		} else {
			t.Errorf("%s is not linked into cmd/kubectl-svcproxy: test support belongs under test/", name)
		}
	}
}

// testSupport reports whether a package exists only for the tests: the
// test harness and the end-to-end suites live under test/, and nothing
// else does. This prefix is the one list of them; hack/test.sh's
// cross-compile and docs/ARCHITECTURE.md follow it.
func testSupport(name string) bool {
	return strings.HasPrefix(name, "test/")
}
