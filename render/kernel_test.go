package render_test

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vishvananda/netns"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nfacct"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nsthread"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// requireRoot skips kernel tests where they cannot run, or fails them
// under CI.
func requireRoot(t *testing.T, tools ...string) {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireTools(t, append([]string{"unshare"}, tools...)...)
}

// inFreshNetns runs fn on a thread in a new network namespace, which goes
// away with its last process; commands fn starts run there too.
func inFreshNetns(fn func() error) error {
	return nsthread.Scoped(func() error {
		ns, err := netns.New()
		if err != nil {
			return err
		}
		defer ns.Close()
		return fn()
	})
}

// kernelRoundTrip loads text with iptables-restore into a fresh network
// namespace that lives only as long as the command, and returns what
// iptables-save then prints.
func kernelRoundTrip(t *testing.T, backend string, family nodetable.Family, text string) *ipt.Ruleset {
	t.Helper()
	bin := "iptables"
	if family == nodetable.IPv6 {
		bin = "ip6tables"
	}
	script := bin + "-" + backend + "-restore && " + bin + "-" + backend + "-save"
	var out []byte
	var stderr bytes.Buffer
	err := inFreshNetns(func() error {
		// The counters the nfacct matches name, as apply creates them.
		for _, name := range nfacct.Counters {
			if err := nfacct.Ensure(name); err != nil {
				return err
			}
		}
		cmd := exec.Command("sh", "-c", script)
		cmd.Stdin = strings.NewReader(text)
		cmd.Stderr = &stderr
		var err error
		out, err = cmd.Output()
		return err
	})
	if err != nil {
		t.Fatalf("%s: %v: %s\ninput:\n%s", script, err, stderr.String(), text)
	}
	rs, err := ipt.Parse(out, family)
	if err != nil {
		t.Fatalf("parse %s output: %v", bin+"-save", err)
	}
	return rs
}

// TestGoldenIPTablesKernelRoundTrip loads every golden case into the real
// kernel with both iptables backends and checks that iptables-save gives
// back exactly the rendered rules: the renderer writes the kernel's own
// canonical spelling, which is what makes an exact plan possible.
func TestGoldenIPTablesKernelRoundTrip(t *testing.T) {
	requireRoot(t, "iptables-legacy-restore", "iptables-nft-restore")
	for _, gc := range loadGoldenCases(t) {
		sets, _ := gc.renderIPTables(t, gc.Input)
		for _, backend := range []string{"legacy", "nft"} {
			t.Run(gc.Name+"/"+backend, func(t *testing.T) {
				for _, rs := range sets {
					got := kernelRoundTrip(t, backend, rs.Family, rs.String())
					assertKernelHolds(t, rs, got)
				}
			})
		}
	}
}

// assertKernelHolds checks that every rendered chain is in the dump with
// exactly its rules (built-in chain policies aside).
func assertKernelHolds(t *testing.T, rendered, dump *ipt.Ruleset) {
	t.Helper()
	for _, rt := range rendered.Tables {
		dt := dump.Table(rt.Name)
		if dt == nil {
			t.Errorf("table %s missing after restore", rt.Name)
			continue
		}
		for _, rc := range rt.Chains {
			dc := dt.Chain(rc.Name)
			if dc == nil {
				t.Errorf("%s/%s missing after restore", rt.Name, rc.Name)
				continue
			}
			if diff := cmp.Diff(rc.Rules, dc.Rules); diff != "" {
				t.Errorf("%s %s/%s: kernel spells it differently (-rendered +kernel):\n%s", rendered.Family, rt.Name, rc.Name, diff)
			}
		}
	}
}
