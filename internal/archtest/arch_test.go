package archtest

import (
	"encoding/json"
	"errors"
	"io"
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
}

// listPackages runs go list on the module's packages.
func listPackages(t *testing.T) map[string]*pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Imports,Deps,Standard", module+"...")
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
