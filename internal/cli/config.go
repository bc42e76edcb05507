package cli

import (
	"fmt"
	"os"
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
	} `json:"iptables"`
	Linux struct {
		MasqueradeAll *bool `json:"masqueradeAll"`
	} `json:"linux"`
	IPVS struct {
		Scheduler string `json:"scheduler"`
	} `json:"ipvs"`
}

// applyConfigFile reads a KubeProxyConfiguration file and sets every flag
// that the command line did not set explicitly: flags win over the file.
func (f *ProxyFlags) applyConfigFile(fs *pflag.FlagSet) error {
	if f.ConfigFile == "" {
		return nil
	}
	data, err := os.ReadFile(f.ConfigFile)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	var c kubeProxyConfiguration
	if err := yaml.Unmarshal(data, &c); err != nil {
		return fmt.Errorf("--config %s: %w", f.ConfigFile, err)
	}
	if c.Kind != "" && c.Kind != "KubeProxyConfiguration" {
		return fmt.Errorf("--config %s: kind %q, want KubeProxyConfiguration", f.ConfigFile, c.Kind)
	}
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
	for name, value := range set {
		if value == "" || fs.Changed(name) {
			continue
		}
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("--config %s: %s: %w", f.ConfigFile, name, err)
		}
	}
	return nil
}
