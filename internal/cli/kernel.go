package cli

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/lock"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftgen"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/userspace"
)

// kernelFlags are the options of the commands that read or change the
// kernel: plan, apply and reset.
type kernelFlags struct {
	backend  string
	lockFile string
	lockWait time.Duration
	stateDir string
	// ipvsExclude are kube-proxy's --ipvs-exclude-cidrs.
	ipvsExclude []string
	// ipvsStrictARP is kube-proxy's --ipvs-strict-arp.
	ipvsStrictARP bool
}

func (k *kernelFlags) addFlags(fs *pflag.FlagSet, locking bool) {
	fs.StringVar(&k.backend, "iptables-backend", "auto", "iptables backend: auto (detect as kube-proxy's image does), legacy or nft")
	fs.StringVar(&k.stateDir, "state-dir", "/run/kubectl-svcproxy", "where dumps of the nf_tables backend are cached, per network namespace (empty: no cache)")
	fs.StringSliceVar(&k.ipvsExclude, "ipvs-exclude-cidrs", nil, "ipvs mode: CIDRs whose IPVS virtual servers the tool never touches, as kube-proxy's flag")
	fs.BoolVar(&k.ipvsStrictARP, "ipvs-strict-arp", false, "ipvs mode: set arp_ignore=1 and arp_announce=2 so the node does not answer ARP for kube-ipvs0's addresses, as kube-proxy's flag")
	if locking {
		fs.StringVar(&k.lockFile, "lock-file", lock.DefaultPath, "the lock file that keeps two runs from interleaving")
		fs.DurationVar(&k.lockWait, "lock-wait", 0, "how long to wait for another run to finish (0: fail at once)")
	}
}

// iptablesClient returns a client for the chosen or detected backend.
// iptablesClient returns the iptables client of the backend in use, for
// the chains own names.
func (k *kernelFlags) iptablesClient(ctx context.Context, own *ipt.Ownership) (*applyipt.Client, error) {
	b, err := applyipt.ParseBackend(k.backend)
	if err != nil {
		return nil, err
	}
	ex := applyipt.OSExec{}
	if b == "" {
		if b, err = applyipt.DetectBackend(ctx, ex); err != nil {
			return nil, err
		}
	}
	client := &applyipt.Client{Exec: ex, Backend: b, WaitSeconds: 5, Ownership: own}
	if k.stateDir != "" {
		// The cache is valid for one network namespace only.
		if cookie, err := nftgen.NetnsCookie(); err == nil {
			client.CacheDir = filepath.Join(k.stateDir, fmt.Sprintf("netns-%d", cookie))
			client.Generation = nftgen.Read
		}
	}
	return client, nil
}

// excludeCIDRs parses --ipvs-exclude-cidrs.
func (k *kernelFlags) excludeCIDRs() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range k.ipvsExclude {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("--ipvs-exclude-cidrs: %q is not a CIDR: %w", s, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

func (k *kernelFlags) lock() (*lock.Lock, error) {
	return lock.Acquire(k.lockFile, k.lockWait)
}

// desired is the rendered state of every selected family.
type desired struct {
	mode      Mode
	tables    *nodetable.Tables
	families  []nodetable.Family
	iptables  []*ipt.Ruleset
	nftables  []*nft.Ruleset
	ipvs      []*ipvs.Ruleset
	userspace []*userspace.Ruleset
	cfg       render.Config
	// userspaceOpts are the userspace mode's proxy-port range and address.
	userspaceOpts render.UserspaceOptions
	// onNode is set for the commands that run on the node (plan, apply,
	// reset, proxy): they read the node's interface addresses and sysctls,
	// as kube-proxy does. render stays a function of its inputs.
	onNode bool
}

// renderDesired loads the cluster state and renders the selected mode;
// modes lists the modes the calling command supports.
func (c *common) renderDesired(cmd *cobra.Command, src *sourceFlags, modes ...Mode) (*desired, error) {
	settings, err := c.renderSettings(cmd, src, modes...)
	if err != nil {
		return nil, err
	}
	snap, err := c.load(cmd.Context(), src)
	if err != nil {
		return nil, err
	}
	return c.renderSnapshot(settings, snap)
}

// renderSettings validates the flags and returns the mode, families and
// render settings, with nothing rendered yet.
func (c *common) renderSettings(cmd *cobra.Command, src *sourceFlags, modes ...Mode) (*desired, error) {
	src.complete(cmd, c.proxy)
	if err := src.validate(); err != nil {
		return nil, err
	}
	mode, err := c.proxy.mode()
	if err != nil {
		return nil, err
	}
	if !slices.Contains(modes, mode) {
		return nil, fmt.Errorf("--mode %s: not implemented for %s", mode, cmd.Name())
	}
	d := &desired{mode: mode}
	if d.families, err = c.proxy.families(); err != nil {
		return nil, err
	}
	if d.cfg, err = c.proxy.RenderConfig(); err != nil {
		return nil, err
	}
	if mode == ModeIPVS {
		if err := (render.IPVSOptions{Scheduler: c.proxy.IPVSScheduler}).Validate(); err != nil {
			return nil, fmt.Errorf("--ipvs-scheduler: %w", err)
		}
	}
	if d.userspaceOpts, err = c.proxy.userspaceOptions(); err != nil {
		return nil, err
	}
	if cmd.Name() != "render" {
		d.onNode = true
		readNodeSysctls(&d.cfg)
	}
	return d, nil
}

// renderSnapshot renders snap with the settings from renderSettings into a
// new desired state.
func (c *common) renderSnapshot(settings *desired, snap *cluster.Snapshot) (*desired, error) {
	d := &desired{mode: settings.mode, families: settings.families, cfg: settings.cfg, userspaceOpts: settings.userspaceOpts, onNode: settings.onNode}
	if d.onNode && len(d.cfg.HostAddresses) == 0 {
		// Read at every render: in watch mode addresses come and go.
		d.cfg.HostAddresses = hostAddresses()
	}
	var err error
	if d.tables, err = c.tables(snap); err != nil {
		return nil, err
	}
	for _, f := range d.families {
		table := d.tables.ForFamily(f)
		switch d.mode {
		case ModeIPTables:
			d.iptables = append(d.iptables, render.IPTables(table, d.cfg))
		case ModeNFTables:
			d.nftables = append(d.nftables, render.NFTables(table, d.cfg))
		case ModeIPVS:
			d.ipvs = append(d.ipvs, render.IPVS(table, d.cfg, render.IPVSOptions{Scheduler: c.proxy.IPVSScheduler}))
		case ModeUserspace:
			d.userspace = append(d.userspace, render.Userspace(table, d.cfg, d.userspaceOpts))
		}
	}
	return d, nil
}

// readNodeSysctls fills in what kube-proxy reads from the node's sysctls
// at startup: with nf_conntrack_tcp_be_liberal set, it installs no rule that
// drops conntrack-INVALID packets. Only plan and apply, which run on the
// node, call it; render stays a function of its inputs.
func readNodeSysctls(cfg *render.Config) {
	if v, err := os.ReadFile("/proc/sys/net/netfilter/nf_conntrack_tcp_be_liberal"); err == nil && len(v) > 0 && v[0] != '0' {
		cfg.ConntrackTCPBeLiberal = true
	}
}

// hostAddresses returns the addresses of this network namespace's
// interfaces, against which kube-proxy matches --nodeport-addresses CIDRs
// and, in ipvs mode, creates NodePort virtual servers. kube-ipvs0 is left
// out, as kube-proxy leaves it out (GetAllLocalAddressesExcept): its
// addresses are Service IPs, not the node's. nil (when the interfaces
// cannot be read) makes render fall back to the node IPs and loopback.
func hostAddresses() []netip.Addr {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, iface := range ifaces {
		if iface.Name == ipvs.DummyDevice {
			continue
		}
		addrs, err := iface.Addrs()
		if err != nil {
			return nil
		}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil {
				out = append(out, p.Addr().Unmap())
			}
		}
	}
	return out
}

// ensureRouteLocalnet sets net.ipv4.conf.all.route_localnet=1 when
// NodePorts must answer on 127.0.0.1, as kube-proxy does.
func ensureRouteLocalnet(d *desired) error {
	if !render.LocalhostNodePorts(d.tables.IPv4, d.cfg) {
		return nil
	}
	const path = "/proc/sys/net/ipv4/conf/all/route_localnet"
	if cur, err := os.ReadFile(path); err == nil && len(cur) > 0 && cur[0] == '1' {
		return nil
	}
	if err := os.WriteFile(path, []byte("1"), 0o644); err != nil {
		return fmt.Errorf("set route_localnet for localhost NodePorts (or pass --iptables-localhost-nodeports=false): %w", err)
	}
	return nil
}

// syncKernel plans desired iptables rules against the kernel and applies
// them under the run lock, as the selected mode owns them (the userspace
// mode's portal rules go through here too). With dryRun it takes no lock
// and prints the restore input instead, returning nil plans. beforeApply
// runs just before writing.
func (c *common) syncKernel(ctx context.Context, k *kernelFlags, desired []*ipt.Ruleset, dryRun bool, beforeApply func() error) (*applyipt.Client, []*applyipt.Plan, error) {
	mode, err := c.proxy.mode()
	if err != nil {
		return nil, nil, err
	}
	b, err := c.backend(ctx, k, mode)
	if err != nil {
		return nil, nil, err
	}
	ib, ok := b.(*iptablesBackend)
	if !ok {
		return nil, nil, fmt.Errorf("--mode %s does not write iptables rules this way", mode)
	}
	p, err := c.sync(ctx, k, b, func() (kernelPlan, error) { return ib.planRulesets(ctx, desired) }, dryRun, beforeApply)
	if err != nil || dryRun {
		return ib.client, nil, err
	}
	return ib.client, p.(*iptablesPlan).plans, nil
}

// sync makes a plan and applies it under the run lock. With dryRun it takes
// no lock, prints what apply would send to the kernel, and returns the plan
// unapplied. beforeApply runs just before writing.
func (c *common) sync(ctx context.Context, k *kernelFlags, b kernelBackend, plan func() (kernelPlan, error), dryRun bool, beforeApply func() error) (kernelPlan, error) {
	if !dryRun {
		l, err := k.lock()
		if err != nil {
			return nil, err
		}
		defer l.Release()
	}
	p, err := plan()
	if err != nil {
		return nil, err
	}
	if dryRun {
		return p, b.dryRun(c.streams.Out, p)
	}
	if beforeApply != nil {
		if err := beforeApply(); err != nil {
			return nil, err
		}
	}
	if p.empty() {
		return p, nil
	}
	return p, b.apply(ctx, p)
}
