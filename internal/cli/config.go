package cli

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"
)

// kubeProxyConfiguration holds the fields of kube-proxy's
// KubeProxyConfiguration (kubeproxy.config.k8s.io/v1alpha1) that shape the
// rules. Other fields of a real kube-proxy config file are ignored.
type kubeProxyConfiguration struct {
	APIVersion        string   `json:"apiVersion"`
	Kind              string   `json:"kind"`
	HostnameOverride  string   `json:"hostnameOverride"`
	ClusterCIDR       string   `json:"clusterCIDR"`
	Mode              string   `json:"mode"`
	NodePortAddresses []string `json:"nodePortAddresses"`
	DetectLocalMode   string   `json:"detectLocalMode"`
	DetectLocal       struct {
		BridgeInterface     string `json:"bridgeInterface"`
		InterfaceNamePrefix string `json:"interfaceNamePrefix"`
	} `json:"detectLocal"`
	IPTables struct {
		MasqueradeAll      *bool `json:"masqueradeAll"`
		MasqueradeBit      *int  `json:"masqueradeBit"`
		LocalhostNodePorts *bool `json:"localhostNodePorts"`
		syncPeriods
	} `json:"iptables"`
	NFTables struct {
		MasqueradeBit *int `json:"masqueradeBit"`
		syncPeriods
	} `json:"nftables"`
	Linux struct {
		MasqueradeAll *bool `json:"masqueradeAll"`
	} `json:"linux"`
	IPVS struct {
		Scheduler    string   `json:"scheduler"`
		ExcludeCIDRs []string `json:"excludeCIDRs"`
		StrictARP    *bool    `json:"strictARP"`
		syncPeriods
	} `json:"ipvs"`
	// SyncPeriod and MinSyncPeriod at the top level are v1alpha2's.
	syncPeriods
	MetricsBindAddress string `json:"metricsBindAddress"`
	HealthzBindAddress string `json:"healthzBindAddress"`
}

// syncPeriods are a mode section's sync periods, as Go duration strings
// ("30s"), which is how metav1.Duration is written.
type syncPeriods struct {
	SyncPeriod    string `json:"syncPeriod"`
	MinSyncPeriod string `json:"minSyncPeriod"`
}

// modeSettings returns the flags that come from the config's section of
// the mode in effect: its sync periods and, in nftables and ipvs mode,
// what only that section holds.
func (c *kubeProxyConfiguration) modeSettings(mode string) map[string]string {
	set := map[string]string{}
	periods := c.syncPeriods
	switch Mode(mode) {
	case ModeNFTables:
		if c.NFTables.MasqueradeBit != nil {
			set["masquerade-bit"] = strconv.Itoa(*c.NFTables.MasqueradeBit)
		}
		periods = firstPeriods(c.NFTables.syncPeriods, periods)
	case ModeIPVS:
		set["ipvs-exclude-cidrs"] = strings.Join(c.IPVS.ExcludeCIDRs, ",")
		if c.IPVS.StrictARP != nil {
			set["ipvs-strict-arp"] = strconv.FormatBool(*c.IPVS.StrictARP)
		}
		periods = firstPeriods(c.IPVS.syncPeriods, periods)
	default:
		periods = firstPeriods(c.IPTables.syncPeriods, periods)
	}
	set["sync-period"] = periods.SyncPeriod
	set["min-sync-period"] = periods.MinSyncPeriod
	return set
}

// firstPeriods fills in what a mode section leaves unset from the top level.
func firstPeriods(section, top syncPeriods) syncPeriods {
	if section.SyncPeriod == "" {
		section.SyncPeriod = top.SyncPeriod
	}
	if section.MinSyncPeriod == "" {
		section.MinSyncPeriod = top.MinSyncPeriod
	}
	return section
}

// applyConfigFile reads a KubeProxyConfiguration file and sets every flag
// that the command line did not set explicitly: flags win over the file.
// It records the flags it set in fromConfig.
func (f *ProxyFlags) applyConfigFile(fs *pflag.FlagSet) error {
	if f.ConfigFile == "" {
		return nil
	}
	c, err := readConfigFile(f.ConfigFile)
	if err != nil {
		return err
	}
	mode := c.Mode
	if fs.Changed("mode") || mode == "" {
		mode = f.Mode
	}
	f.fromConfig = map[string]bool{}
	for name, value := range c.flagValues(mode) {
		// Commands without a flag (render has no --sync-period) skip it.
		if value == "" || fs.Changed(name) || fs.Lookup(name) == nil {
			continue
		}
		if err := setFromConfig(fs, name, value); err != nil {
			return fmt.Errorf("--config %s: %s: %w", f.ConfigFile, name, err)
		}
		f.fromConfig[name] = true
	}
	return nil
}

// readConfigFile reads and decodes a KubeProxyConfiguration file.
func readConfigFile(path string) (*kubeProxyConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	var c kubeProxyConfiguration
	if err := yaml.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	if c.Kind != "" && c.Kind != "KubeProxyConfiguration" {
		return nil, fmt.Errorf("--config %s: kind %q, want KubeProxyConfiguration", path, c.Kind)
	}
	return &c, nil
}

// flagValues returns the file's settings as flag values ("" for unset),
// with mode's own section.
func (c *kubeProxyConfiguration) flagValues(mode string) map[string]string {
	masqAll := c.Linux.MasqueradeAll
	if masqAll == nil {
		masqAll = c.IPTables.MasqueradeAll
	}
	set := map[string]string{
		"node-name":                 c.HostnameOverride,
		"cluster-cidr":              c.ClusterCIDR,
		"mode":                      c.Mode,
		"nodeport-addresses":        strings.Join(c.NodePortAddresses, ","),
		"detect-local-mode":         c.DetectLocalMode,
		"pod-bridge-interface":      c.DetectLocal.BridgeInterface,
		"pod-interface-name-prefix": c.DetectLocal.InterfaceNamePrefix,
		"ipvs-scheduler":            c.IPVS.Scheduler,
		"metrics-bind-address":      c.MetricsBindAddress,
		"healthz-bind-address":      c.HealthzBindAddress,
	}
	if masqAll != nil {
		set["masquerade-all"] = strconv.FormatBool(*masqAll)
	}
	if c.IPTables.MasqueradeBit != nil {
		set["masquerade-bit"] = strconv.Itoa(*c.IPTables.MasqueradeBit)
	}
	if c.IPTables.LocalhostNodePorts != nil {
		set["iptables-localhost-nodeports"] = strconv.FormatBool(*c.IPTables.LocalhostNodePorts)
	}
	// The mode's own section wins: kube-proxy's nftables mode reads
	// nftables.masqueradeBit, not iptables.masqueradeBit.
	for name, value := range c.modeSettings(mode) {
		if value != "" {
			set[name] = value
		}
	}
	return set
}

// setFromConfig sets a flag to a value from the config file. The
// watch-only settings (sync periods, metrics and healthz addresses) are set
// without marking the flag as given on the command line: kube-proxy's
// config files carry them, and a one-shot apply with such a file must not
// fail for want of --watch.
func setFromConfig(fs *pflag.FlagSet, name, value string) error {
	if slices.Contains(watchOnlyFlags, name) {
		return fs.Lookup(name).Value.Set(value)
	}
	return fs.Set(name, value)
}
