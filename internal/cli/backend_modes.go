package cli

import (
	"context"
	"fmt"
	"io"

	applyipvs "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/ipvs"
	applynft "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftgen"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// otherBackend returns the backends of the modes that do not write through
// iptables-restore alone: nftables (netlink) and ipvs (netlink plus the
// helper chains through iptables-restore).
func (c *common) otherBackend(ctx context.Context, k *kernelFlags, mode Mode) (kernelBackend, error) {
	switch mode {
	case ModeNFTables:
		client, err := applynft.NewClient(render.NFTablesOwnership())
		if err != nil {
			return nil, err
		}
		// The table as last read or written, checked against nf_tables'
		// generation ID: kept in memory (watch mode) and in --state-dir,
		// per network namespace, for the next run.
		client.Cache = true
		client.CacheWarn = k.cacheWarn
		if k.stateDir != "" {
			if cookie, err := nftgen.NetnsCookie(); err == nil {
				if client.CacheDir, err = k.cacheDir(cookie, "nftables"); err != nil {
					client.Close()
					return nil, err
				}
			}
		}
		return &nftBackend{client: client}, nil
	case ModeIPVS:
		return c.ipvsBackend(ctx, k)
	}
	return nil, fmt.Errorf("--mode %s: plan, apply and reset are not implemented for this mode", mode)
}

// nftFamily is nftables' name of an IP family.
func nftFamily(f nodetable.Family) nft.Family {
	if f == nodetable.IPv6 {
		return nft.IPv6
	}
	return nft.IPv4
}

// nftBackend writes the kube-proxy tables through netlink, one transaction
// per table.
type nftBackend struct {
	client *applynft.Client
}

func (b *nftBackend) name() string { return "nftables" }

func (b *nftBackend) plan(ctx context.Context, d *desired) (kernelPlan, error) {
	plans, err := b.client.Plan(ctx, d.nftables)
	return newNFTPlan(plans), err
}

func (b *nftBackend) planReset(ctx context.Context, families []nodetable.Family) (kernelPlan, error) {
	var fams []nft.Family
	for _, f := range families {
		fams = append(fams, nftFamily(f))
	}
	plans, err := b.client.PlanReset(ctx, fams)
	return newNFTPlan(plans), err
}

func (b *nftBackend) apply(ctx context.Context, p kernelPlan) error {
	return b.client.Apply(ctx, p.(*nftPlan).plans)
}

func (b *nftBackend) dryRun(w io.Writer, p kernelPlan) error {
	script := applynft.Script(p.(*nftPlan).plans)
	if script == "" {
		script = "# nothing to change (nftables)\n"
	}
	_, err := io.WriteString(w, script)
	return err
}

// nftPlan is one plan per kube-proxy table.
type nftPlan struct {
	modePlan[*applynft.Plan]
}

func newNFTPlan(plans []*applynft.Plan) *nftPlan {
	return &nftPlan{modePlan[*applynft.Plan]{
		liveName: "nftables", plans: plans,
		changes: func(p *applynft.Plan) changeSet { return p.Changes },
		ports:   nftPorts,
		live:    nftLive,
		family: func(p *applynft.Plan) nodetable.Family {
			if p.Family == nft.IPv6 {
				return nodetable.IPv6
			}
			return nodetable.IPv4
		},
	}}
}

// pending returns the stale chains an apply emptied but could not delete
// yet; the next apply deletes them.
func (p *nftPlan) pending() []string {
	var out []string
	for _, pl := range p.plans {
		for _, c := range pl.Pending {
			out = append(out, string(pl.Family)+" "+c)
		}
	}
	return out
}

// ipvsBackend writes IPVS, kube-ipvs0 and the ipsets through netlink and
// the helper chains through iptables-restore.
type ipvsBackend struct {
	client    *applyipvs.Client
	strictARP bool
}

func (c *common) ipvsBackend(ctx context.Context, k *kernelFlags) (kernelBackend, error) {
	exclude, err := k.excludeCIDRs("--ipvs-exclude-cidrs")
	if err != nil {
		return nil, err
	}
	own := render.IPVSOwnership(exclude)
	ipt, err := k.iptablesClient(ctx, own.Chains)
	if err != nil {
		return nil, err
	}
	kernel, err := applyipvs.OpenKernel("")
	if err != nil {
		return nil, err
	}
	return &ipvsBackend{client: &applyipvs.Client{Kernel: kernel, IPTables: ipt, Ownership: own}, strictARP: k.ipvsStrictARP}, nil
}

func (b *ipvsBackend) name() string { return "ipvs, iptables-" + string(b.client.IPTables.Backend) }

func (b *ipvsBackend) plan(ctx context.Context, d *desired) (kernelPlan, error) {
	plans, err := b.client.Plan(ctx, d.ipvs)
	return newIPVSPlan(plans, b.client.Ownership), err
}

func (b *ipvsBackend) planReset(ctx context.Context, families []nodetable.Family) (kernelPlan, error) {
	plans, err := b.client.PlanReset(ctx, families)
	return newIPVSPlan(plans, b.client.Ownership), err
}

// apply writes the plan; the sysctls IPVS needs (conntrack for the
// masquerade rules, expiry of flows to removed real servers) are in the
// plan (wantedSysctls), written before it.
func (b *ipvsBackend) apply(ctx context.Context, p kernelPlan) error {
	return b.client.Apply(ctx, p.(*ipvsPlan).plans)
}

func (b *ipvsBackend) dryRun(w io.Writer, p kernelPlan) error {
	script := b.client.Script(p.(*ipvsPlan).plans)
	if script == "" {
		script = "# nothing to change (ipvs)\n"
	}
	_, err := io.WriteString(w, script)
	return err
}

// ipvsPlan is one plan per family.
type ipvsPlan = modePlan[*applyipvs.Plan]

func newIPVSPlan(plans []*applyipvs.Plan, own *ipvs.Ownership) *ipvsPlan {
	return &ipvsPlan{
		liveName: "ipvs", plans: plans,
		changes: func(p *applyipvs.Plan) changeSet { return p.Changes },
		ports:   ipvsPorts,
		live:    ipvsLive(own),
		family:  func(p *applyipvs.Plan) nodetable.Family { return p.Desired.Family },
	}
}
