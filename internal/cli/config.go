package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// configSetting is a flag's value from the config file, and the file's
// field it came from.
type configSetting struct {
	value string
	field string
}

// settings collects the file's settings by flag name, skipping the
// fields the file leaves unset.
type settings map[string]configSetting

func (s settings) add(flag, field, value string) {
	if value != "" {
		s[flag] = configSetting{value: value, field: field}
	}
}

func (s settings) addBool(flag, field string, value *bool) {
	if value != nil {
		s.add(flag, field, strconv.FormatBool(*value))
	}
}

func (s settings) addInt(flag, field string, value *int32) {
	if value != nil {
		s.add(flag, field, strconv.Itoa(int(*value)))
	}
}

// modeSettings adds what comes from the config's section of the mode in
// effect, as kube-proxy's conversion of v1alpha1 reads it: the sync
// periods, and the masquerade settings in nftables mode (iptables' in the
// others), the ipvs section's own settings in ipvs mode.
func (c *kubeProxyConfiguration) modeSettings(s settings, mode string) {
	section, periods := "iptables", c.IPTables.syncPeriods
	masqBit, masqAll := c.IPTables.MasqueradeBit, c.IPTables.MasqueradeAll
	switch Mode(mode) {
	case ModeNFTables:
		section, periods = "nftables", c.NFTables.syncPeriods
		masqBit, masqAll = c.NFTables.MasqueradeBit, c.NFTables.MasqueradeAll
	case ModeIPVS:
		section, periods = "ipvs", c.IPVS.syncPeriods
		s.add("ipvs-exclude-cidrs", "ipvs.excludeCIDRs", strings.Join(c.IPVS.ExcludeCIDRs, ","))
		s.addBool("ipvs-strict-arp", "ipvs.strictARP", c.IPVS.StrictARP)
	}
	s.add("sync-period", section+".syncPeriod", periods.SyncPeriod)
	s.add("min-sync-period", section+".minSyncPeriod", periods.MinSyncPeriod)
	if Mode(mode) == ModeNFTables {
		section = "nftables"
	} else {
		section = "iptables"
	}
	s.addInt("masquerade-bit", section+".masqueradeBit", masqBit)
	s.addBool("masquerade-all", section+".masqueradeAll", masqAll)
}

// flagValues returns the file's settings by flag name, with mode's own
// section.
func (c *kubeProxyConfiguration) flagValues(mode string) settings {
	s := settings{}
	s.add("node-name", "hostnameOverride", strings.ToLower(strings.TrimSpace(c.HostnameOverride)))
	s.add("cluster-cidr", "clusterCIDR", c.ClusterCIDR)
	// kubeadm's kube-proxy ConfigMap names its kubeconfig here, as
	// deploy/base/daemonset.yaml does; --kubeconfig on the command line wins.
	s.add("kubeconfig", "clientConnection.kubeconfig", c.ClientConnection.Kubeconfig)
	c.ClientConnection.settings(s)
	s.add("mode", "mode", c.Mode)
	s.add("nodeport-addresses", "nodePortAddresses", strings.Join(c.NodePortAddresses, ","))
	s.add("detect-local-mode", "detectLocalMode", c.DetectLocalMode)
	s.add("pod-bridge-interface", "detectLocal.bridgeInterface", c.DetectLocal.BridgeInterface)
	s.add("pod-interface-name-prefix", "detectLocal.interfaceNamePrefix", c.DetectLocal.InterfaceNamePrefix)
	s.add("ipvs-scheduler", "ipvs.scheduler", c.IPVS.Scheduler)
	s.add("metrics-bind-address", "metricsBindAddress", c.MetricsBindAddress)
	s.add("healthz-bind-address", "healthzBindAddress", c.HealthzBindAddress)
	if c.EnableProfiling {
		s.add("profiling", "enableProfiling", "true")
	}
	s.add("proxy-port-range", "portRange", c.PortRange)
	s.addBool("iptables-localhost-nodeports", "iptables.localhostNodePorts", c.IPTables.LocalhostNodePorts)
	c.conntrackSettings(s)
	c.modeSettings(s, mode)
	return s
}

// conntrackSettings adds the conntrack section, which plan and apply set
// on the node as kube-proxy does.
func (c *kubeProxyConfiguration) conntrackSettings(s settings) {
	ct := c.Conntrack
	s.addInt("conntrack-max-per-core", "conntrack.maxPerCore", ct.MaxPerCore)
	s.addInt("conntrack-min", "conntrack.min", ct.Min)
	s.add("conntrack-tcp-timeout-established", "conntrack.tcpEstablishedTimeout", ct.TCPEstablishedTimeout)
	s.add("conntrack-tcp-timeout-close-wait", "conntrack.tcpCloseWaitTimeout", ct.TCPCloseWaitTimeout)
	if ct.TCPBeLiberal {
		s.add("conntrack-tcp-be-liberal", "conntrack.tcpBeLiberal", "true")
	}
	s.add("conntrack-udp-timeout", "conntrack.udpTimeout", ct.UDPTimeout)
	s.add("conntrack-udp-timeout-stream", "conntrack.udpStreamTimeout", ct.UDPStreamTimeout)
}

// applyConfigFile reads a KubeProxyConfiguration file and sets every flag
// that the command line did not set explicitly: flags win over the file.
// It records the flags it set, with their fields, in fromConfig.
func (f *ProxyFlags) applyConfigFile(fs *pflag.FlagSet) error {
	if f.ConfigFile == "" {
		return nil
	}
	c, err := readConfigFile(f.ConfigFile)
	if err != nil {
		return err
	}
	f.config = c
	mode := c.Mode
	if fs.Changed("mode") || mode == "" {
		mode = f.Mode
	}
	f.fromConfig = map[string]string{}
	for name, set := range c.flagValues(mode) {
		// Commands without a flag (render has no --sync-period) skip it.
		if fs.Changed(name) || fs.Lookup(name) == nil {
			continue
		}
		if err := setFromConfig(fs, name, set.value); err != nil {
			return fmt.Errorf("%s %q: %w", c.at(set.field), set.value, err)
		}
		f.fromConfig[name] = set.field
	}
	return nil
}

// setFromConfig sets a flag to a value from the config file. The
// watch-only settings (sync periods, metrics and healthz addresses) are set
// without marking the flag as given on the command line: kube-proxy's
// config files carry them, and a one-shot apply with such a file must not
// fail for want of --watch.
func setFromConfig(fs *pflag.FlagSet, name, value string) error {
	flag := fs.Lookup(name)
	if err := flag.Value.Set(value); err != nil {
		return err
	}
	if !slices.Contains(watchOnlyFlags, name) {
		flag.Changed = true
	}
	return nil
}

// describe names a setting for a message about its value: the config
// file's field when the value came from the file ("--config kp.yaml:3:
// mode:"), else the flag as the command line gave it ("--proxy-mode").
func (f *ProxyFlags) describe(flag string) string {
	if field, ok := f.fromConfig[flag]; ok && f.config != nil {
		return f.config.at(field)
	}
	return givenFlag(f.flags, flag)
}
