package cli

import (
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nfacct"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
)

// ProxyFlags are kube-proxy's node and proxy settings, named after its
// flags. Each command registers the parts it uses.
type ProxyFlags struct {
	Mode               string
	NodeName           string
	NodeIPs            []string
	ClusterCIDRs       []string
	ServiceCIDRs       []string
	MasqueradeAll      bool
	MasqueradeBit      int
	NodePortAddresses  []string
	LocalhostNodePorts bool
	DetectLocalMode    string
	BridgeInterface    string
	InterfacePrefix    string
	IPVSScheduler      string
	NFAcct             bool
	NFTablesLayout     string
	Family             string
	ConfigFile         string
	ProxyPortRange     string
	BindAddress        string

	// parts are the flags the command registers; --config always.
	parts proxyParts
	// onNode is set by the commands that run on the node: they read its
	// sysctls and interface addresses, as kube-proxy does.
	onNode bool
	// command names the command, for messages.
	command string
	// flags are the command's flags, to tell which were given.
	flags *pflag.FlagSet
	// config is the config file read, if any.
	config *configFile
	// fromConfig are the flags the config file set, with the file's
	// field that set each.
	fromConfig map[string]string
	// settings are the parsed flags: Complete fills them.
	settings renderSettings
}

// proxyParts select the parts of ProxyFlags a command registers.
type proxyParts uint8

const (
	// nodePart is --node-name.
	nodePart proxyParts = 1 << iota
	// modePart is --mode and --family.
	modePart
	// settingsPart is what shapes the rules in every mode: the node's
	// IPs, the pod and Service ranges, masquerading, NodePort addresses,
	// how pod traffic is recognised, nfacct.
	settingsPart
	// ipvsPart is the ipvs mode's --ipvs-scheduler.
	ipvsPart
	// userspacePart is the userspace mode's --proxy-port-range and
	// --bind-address.
	userspacePart

	// allParts are the flags of the commands that render in every mode.
	allParts = nodePart | modePart | settingsPart | ipvsPart | userspacePart
)

// NewProxyFlags returns the parts of the flags, with kube-proxy's defaults.
func NewProxyFlags(parts proxyParts) *ProxyFlags {
	def := render.DefaultConfig()
	return &ProxyFlags{
		parts:              parts,
		Mode:               string(ModeIPTables),
		MasqueradeBit:      def.MasqueradeBit,
		LocalhostNodePorts: def.LocalhostNodePorts,
		DetectLocalMode:    string(def.DetectLocalMode),
		IPVSScheduler:      "rr",
		NFAcct:             def.NFAcct,
		NFTablesLayout:     render.NFTablesLayoutKubeProxy,
		Family:             "all",
	}
}

// AddFlags registers the command's parts of the flags on fs.
func (f *ProxyFlags) AddFlags(fs *pflag.FlagSet) {
	if f.parts&modePart != 0 {
		fs.StringVar(&f.Mode, "mode", f.Mode, "proxy mode: iptables, nftables, ipvs or userspace")
		fs.StringVar(&f.Family, "family", f.Family, "IP families to render: all, ipv4 or ipv6")
		fs.StringVar(&f.NFTablesLayout, "nftables-layout", f.NFTablesLayout, "nftables mode: kube-proxy (kube-proxy's own rules) or compact (the same chains and choices with shared endpoint maps instead of a map per service, which the kernel loads far faster at scale; docs/PERFORMANCE.md)")
	}
	if f.parts&nodePart != 0 {
		// The default is filled in by Complete, so that help shows it once,
		// in words, and the config file's hostnameOverride can still set it.
		fs.StringVar(&f.NodeName, "node-name", "", "the node to render for (default: this machine's hostname, in lower case)")
	}
	if f.parts&settingsPart != 0 {
		f.addSettingsFlags(fs)
	}
	if f.parts&ipvsPart != 0 {
		fs.StringVar(&f.IPVSScheduler, "ipvs-scheduler", f.IPVSScheduler, "the IPVS scheduler (ipvs mode)")
	}
	if f.parts&userspacePart != 0 {
		fs.StringVar(&f.ProxyPortRange, "proxy-port-range", "", "userspace mode: the range of proxy ports, a-b or a+n (default 20000-29999)")
		fs.StringVar(&f.BindAddress, "bind-address", "", "userspace mode: the address the proxy listens on (default: all)")
	}
	fs.StringVar(&f.ConfigFile, "config", "", "a kube-proxy KubeProxyConfiguration file; flags given on the command line win over it")
}

// addSettingsFlags registers the flags that shape the rules in every mode.
func (f *ProxyFlags) addSettingsFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&f.NodeIPs, "node-ip", f.NodeIPs, "the node's primary IPs, one per family (default: from the Node object)")
	fs.StringSliceVar(&f.ClusterCIDRs, "cluster-cidr", f.ClusterCIDRs, "the pod ranges, one per family; traffic from outside them is masqueraded")
	fs.StringSliceVar(&f.ServiceCIDRs, "service-cidr", f.ServiceCIDRs, "the Service ranges (default: from ServiceCIDR objects)")
	fs.BoolVar(&f.MasqueradeAll, "masquerade-all", f.MasqueradeAll, "SNAT all traffic sent to a ClusterIP")
	fs.IntVar(&f.MasqueradeBit, "masquerade-bit", f.MasqueradeBit, "the fwmark bit (0-31) that marks packets for SNAT")
	fs.StringSliceVar(&f.NodePortAddresses, "nodeport-addresses", f.NodePortAddresses, "CIDRs or primary/localhost/all: the node addresses that accept NodePorts (default: all in iptables mode, primary in nftables mode)")
	fs.BoolVar(&f.LocalhostNodePorts, "iptables-localhost-nodeports", f.LocalhostNodePorts, "accept NodePort connections on 127.0.0.1 (iptables mode, IPv4)")
	fs.StringVar(&f.DetectLocalMode, "detect-local-mode", f.DetectLocalMode, "how pod traffic is recognised: ClusterCIDR, NodeCIDR, BridgeInterface or InterfaceNamePrefix")
	fs.StringVar(&f.BridgeInterface, "pod-bridge-interface", f.BridgeInterface, "the pod bridge, with --detect-local-mode=BridgeInterface")
	fs.StringVar(&f.InterfacePrefix, "pod-interface-name-prefix", f.InterfacePrefix, "the pod interface prefix, with --detect-local-mode=InterfaceNamePrefix")
	fs.BoolVar(&f.NFAcct, "nfacct", f.NFAcct, "iptables mode: kube-proxy's nfacct counting matches, and with them the localhost NodePort rules; plan and apply default to whether the kernel has nfacct, and apply creates the counters, as kube-proxy does")
}

// Complete reads the config file: it sets every flag that the command
// line did not set. A node name that neither set is the hostname, as
// kube-proxy's.
func (f *ProxyFlags) Complete(cmd *cobra.Command) error {
	f.command = cmd.Name()
	f.flags = cmd.Flags()
	if err := f.applyConfigFile(cmd.Flags()); err != nil {
		return err
	}
	if f.NodeName == "" {
		host, _ := os.Hostname()
		f.NodeName = strings.ToLower(host)
	}
	return nil
}

// completeMode parses --mode and --family.
func (f *ProxyFlags) completeMode() error {
	s := &f.settings
	var err error
	if s.mode, err = parseMode(f.describe("mode"), f.Mode); err != nil {
		return err
	}
	s.families, err = parseFamilies(f.Family)
	return err
}

// completeSettings parses everything a render needs. A command that runs
// on the node reads the node's sysctls, as kube-proxy does at startup.
func (f *ProxyFlags) completeSettings() error {
	if err := f.completeMode(); err != nil {
		return err
	}
	s := &f.settings
	var err error
	if s.cluster, err = f.clusterConfig(); err != nil {
		return err
	}
	if s.cfg, err = f.renderConfig(); err != nil {
		return err
	}
	s.ipvs = render.IPVSOptions{Scheduler: f.IPVSScheduler}
	if s.mode == ModeUserspace {
		if s.userspace, err = f.userspaceOptions(); err != nil {
			return err
		}
	}
	s.onNode = f.onNode
	if f.onNode {
		readNodeSysctls(&s.cfg)
		if s.mode == ModeIPTables && (f.flags == nil || !f.flags.Changed("nfacct")) {
			s.cfg.NFAcct = nfacct.Supported()
		}
	}
	return nil
}

// validateRender checks the settings completeSettings parsed; modes are the
// modes the command implements.
func (f *ProxyFlags) validateRender(modes ...Mode) error {
	s := &f.settings
	if !slices.Contains(modes, s.mode) {
		return fmt.Errorf("%s %s: not implemented for %s", f.describe("mode"), s.mode, f.command)
	}
	if err := f.validateModeFlags(); err != nil {
		return err
	}
	if err := s.cfg.Validate(); err != nil {
		return f.settingError(err)
	}
	if s.mode == ModeIPVS {
		if err := s.ipvs.Validate(); err != nil {
			return f.settingError(err)
		}
	}
	return f.settingError(s.userspace.Validate())
}

// validateModeFlags refuses the flags of another mode than --mode.
func (f *ProxyFlags) validateModeFlags() error {
	return checkModeFlags(f.flags, f.settings.mode, f.fromConfig)
}

// clusterConfig returns the settings for building the node-local tables.
func (f *ProxyFlags) clusterConfig() (cluster.Config, error) {
	cfg := cluster.Config{NodeName: f.NodeName}
	if f.NodeName == "" {
		return cfg, fmt.Errorf("%s is empty and the hostname is unknown", f.describe("node-name"))
	}
	for _, s := range f.NodeIPs {
		a, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil {
			return cfg, fmt.Errorf("%s %q: not an IP address", f.describe("node-ip"), s)
		}
		cfg.NodeIPs = append(cfg.NodeIPs, a)
	}
	cidrs, err := parsePrefixes(f.describe("service-cidr"), f.ServiceCIDRs)
	cfg.ServiceCIDRs = cidrs
	return cfg, err
}

// renderConfig returns the settings for the renderers, unchecked:
// validateRender checks them.
func (f *ProxyFlags) renderConfig() (render.Config, error) {
	cfg := render.DefaultConfig()
	cfg.MasqueradeAll = f.MasqueradeAll
	cfg.MasqueradeBit = f.MasqueradeBit
	cfg.NodePortAddresses = f.NodePortAddresses
	cfg.LocalhostNodePorts = f.LocalhostNodePorts
	cfg.DetectLocalMode = render.DetectLocalMode(f.DetectLocalMode)
	cfg.BridgeInterface = f.BridgeInterface
	cfg.InterfaceNamePrefix = f.InterfacePrefix
	cfg.NFAcct = f.NFAcct
	cfg.NFTablesLayout = f.NFTablesLayout
	cidrs, err := parsePrefixes(f.describe("cluster-cidr"), f.ClusterCIDRs)
	cfg.ClusterCIDRs = cidrs
	return cfg, err
}

func parsePrefixes(flag string, in []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range in {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("%s %q: not a CIDR", flag, s)
		}
		out = append(out, p)
	}
	return out, nil
}

// userspaceOptions parses the userspace mode's options; validateRender
// checks them.
func (f *ProxyFlags) userspaceOptions() (render.UserspaceOptions, error) {
	var o render.UserspaceOptions
	if f.ProxyPortRange != "" {
		r, err := render.ParseProxyPortRange(f.ProxyPortRange)
		if err != nil {
			return o, fmt.Errorf("%s: %w", strings.TrimSuffix(f.describe("proxy-port-range"), ":"), err)
		}
		o.PortRange = r
	}
	if f.BindAddress != "" {
		a, err := netip.ParseAddr(f.BindAddress)
		if err != nil {
			return o, fmt.Errorf("%s %q: not an IP address", f.describe("bind-address"), f.BindAddress)
		}
		o.ListenIP = a
	}
	return o, nil
}
