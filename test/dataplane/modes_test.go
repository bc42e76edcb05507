package dataplane

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	applyipvs "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/ipvs"
	applynft "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftgen"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/statefile"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/vmtest"
)

// prepare renders a table for one mode, untimed, and returns the timed
// step: Plan (which reads the kernel) and Apply.
type prepare func(t *nodetable.ServiceTable) (apply func(context.Context) error)

// mode is one proxy mode of the benchmark.
type mode struct {
	name string
	// guestOnly modes need IPVS, which only the VM's kernel has.
	guestOnly bool
	// open makes a client of the lab's node namespace.
	open func(b *testing.B, lab *netlab.Lab) prepare
}

var modes = []mode{
	{name: "iptables", open: openIPTables},
	{name: "nftables", open: openNFTables(render.NFTablesLayoutKubeProxy)},
	{name: "nftables-compact", open: openNFTables(render.NFTablesLayoutCompact)},
	{name: "ipvs", guestOnly: true, open: openIPVS},
}

func modeByName(name string) (mode, bool) {
	for _, m := range modes {
		if m.name == name {
			return m, true
		}
	}
	return mode{}, false
}

func modeNames() string {
	var names []string
	for _, m := range modes {
		names = append(names, m.name)
	}
	return strings.Join(names, ", ")
}

// skipUnlessHere skips an ipvs run on the host. That is by design, not a
// missing prerequisite, so it is a plain skip also under CI: this host's
// kernel has no IPVS, and TestDataplaneInVM runs the mode in the VM.
func (m mode) skipUnlessHere(b *testing.B) {
	if m.guestOnly && !vmtest.InGuest() {
		b.Skip("needs IPVS, which only the VM's kernel has: DATAPLANE_VM=1 go test -run TestDataplaneInVM")
	}
}

// config is the render configuration of every mode: the endpoints'
// range is the cluster CIDR, so the lab's client is masqueraded.
func config() render.Config {
	cfg := render.DefaultConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.128.0.0/9")}
	return cfg
}

// nsExec runs the iptables tools inside a lab namespace.
type nsExec struct{ ns netlab.NS }

func (e nsExec) Run(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error) {
	return e.ns.RunInput(ctx, stdin, name, args...)
}

// openIPTables is iptables mode through iptables-nft, what kube-proxy uses
// on current distributions, with the dump cache of a --state-dir.
func openIPTables(b *testing.B, lab *netlab.Lab) prepare {
	testenv.RequireTools(b, "iptables-nft-restore", "iptables-nft-save")
	c := &applyipt.Client{Exec: nsExec{lab.Node()}, Backend: applyipt.NFT, WaitSeconds: 5,
		Ownership: render.IPTablesOwnership(), Counters: lab.Node().NFAcctCounters()}
	withDumpCache(b, c, lab.Node())
	return func(t *nodetable.ServiceTable) func(context.Context) error {
		desired := []*ipt.Ruleset{render.IPTables(t, config())}
		return func(ctx context.Context) error {
			plans, err := c.Plan(ctx, desired)
			if err == nil {
				err = c.Apply(ctx, plans)
			}
			return err
		}
	}
}

func openNFTables(layout string) func(*testing.B, *netlab.Lab) prepare {
	return func(b *testing.B, lab *netlab.Lab) prepare {
		var c *applynft.Client
		err := lab.Node().Do(func() (err error) {
			c, err = applynft.NewClient(render.NFTablesOwnership())
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		// As the CLI runs it: the table as last written, checked against
		// nf_tables' generation, in memory and in the state directory.
		c.Cache = true
		c.CacheDir = stateDir(b)
		cfg := config()
		cfg.NFTablesLayout = layout
		return func(t *nodetable.ServiceTable) func(context.Context) error {
			desired := []*nft.Ruleset{render.NFTables(t, cfg)}
			return func(ctx context.Context) error {
				plans, err := c.Plan(ctx, desired)
				if err == nil {
					err = c.Apply(ctx, plans)
				}
				return err
			}
		}
	}
}

// openIPVS is ipvs mode with the rr scheduler, its helper chains through
// iptables-nft (with the dump cache), and kube-proxy's sysctls in the node.
func openIPVS(b *testing.B, lab *netlab.Lab) prepare {
	k, err := applyipvs.OpenKernel("/run/netns/" + lab.Node().Name())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(k.Close)
	own := render.IPVSOwnership(nil)
	c := &applyipvs.Client{Kernel: k, Ownership: own,
		IPTables: &applyipt.Client{Exec: nsExec{lab.Node()}, Backend: applyipt.NFT, WaitSeconds: 5, Ownership: own.Chains}}
	withDumpCache(b, c.IPTables, lab.Node())
	if err := c.EnsureSysctls(false); err != nil {
		b.Fatal(err)
	}
	return func(t *nodetable.ServiceTable) func(context.Context) error {
		desired := []*ipvs.Ruleset{render.IPVS(t, config(), render.IPVSOptions{Scheduler: "rr"})}
		return func(ctx context.Context) error {
			plans, err := c.Plan(ctx, desired)
			if err == nil {
				err = c.Apply(ctx, plans)
			}
			return err
		}
	}
}

// withDumpCache turns on c's nf_tables dump cache for ns, as the CLI does
// with a --state-dir: a plan skips iptables-nft-save when nf_tables'
// generation is the one of the last save or restore.
func withDumpCache(b *testing.B, c *applyipt.Client, ns netlab.NS) {
	err := ns.Do(func() (err error) {
		c.NetnsCookie, err = nftgen.NetnsCookie()
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	c.CacheDir = stateDir(b)
	c.Generation = func() (gen uint32, err error) {
		err = ns.Do(func() (err error) {
			gen, err = nftgen.Read()
			return err
		})
		return gen, err
	}
}

// stateDir is a fresh cache directory.
func stateDir(b *testing.B) *statefile.Dir {
	d, err := statefile.OpenDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	return d
}
