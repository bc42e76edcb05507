package conformance

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"

	"golang.org/x/tools/txtar"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
)

// Scenario is one golden case (testdata/golden/<name>.txtar) as the
// conformance runner uses it: the objects of its input.yaml and the node
// and proxy settings of its config.yaml.
type Scenario struct {
	Name string
	// Input is the input.yaml section: Nodes, Services, EndpointSlices and
	// ServiceCIDRs.
	Input []byte
	// Config is the config.yaml section, over kube-proxy's defaults.
	Config CaseConfig
}

// CaseConfig is a golden case's config.yaml, read as render/golden_test.go
// reads it: the node, the families the golden file shows, and the proxy
// settings (render.Config inline).
type CaseConfig struct {
	NodeName     string   `json:"nodeName"`
	NodeIPs      []string `json:"nodeIPs"`
	Families     []string `json:"families"`
	ServiceCIDRs []string `json:"serviceCIDRs"`
	render.Config
}

// LoadScenarios reads every testdata/golden/*.txtar under root (the
// repository root), in name order.
func LoadScenarios(root string) ([]*Scenario, error) {
	paths, err := filepath.Glob(filepath.Join(root, "testdata", "golden", "*.txtar"))
	if err != nil {
		return nil, err
	}
	var out []*Scenario
	for _, p := range paths {
		s, err := loadScenario(p)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func loadScenario(path string) (*Scenario, error) {
	a, err := txtar.ParseFile(path)
	if err != nil {
		return nil, err
	}
	s := &Scenario{Name: strings.TrimSuffix(filepath.Base(path), ".txtar")}
	s.Config.Config = render.DefaultConfig()
	for _, f := range a.Files {
		switch f.Name {
		case "input.yaml":
			s.Input = f.Data
		case "config.yaml":
			if err := yaml.UnmarshalStrict(f.Data, &s.Config); err != nil {
				return nil, fmt.Errorf("%s: config.yaml: %w", path, err)
			}
		}
	}
	if s.Input == nil {
		return nil, fmt.Errorf("%s: no input.yaml section", path)
	}
	if s.Config.NodeName == "" {
		s.Config.NodeName = "node1"
	}
	// kube-proxy takes its node IPs from the Node object and its Service
	// ranges from ServiceCIDR objects; the runner does not translate these
	// overrides into objects.
	if len(s.Config.NodeIPs) > 0 || len(s.Config.ServiceCIDRs) > 0 {
		return nil, fmt.Errorf("%s: config.yaml nodeIPs and serviceCIDRs have no kube-proxy equivalent; put them in Node and ServiceCIDR objects", path)
	}
	return s, nil
}

// Snapshot decodes the scenario's objects.
func (s *Scenario) Snapshot() (*cluster.Snapshot, error) {
	return cluster.Decode(s.Name+"/input.yaml", s.Input)
}

// ClusterConfig is how the tool builds the node-local tables: the node's
// IPs and the Service ranges come from the objects, as for kube-proxy.
func (s *Scenario) ClusterConfig() cluster.Config {
	return cluster.Config{NodeName: s.Config.NodeName}
}

// HostAddresses are the addresses the node's interfaces must hold for
// kube-proxy to see what the renderer is told (config.yaml hostAddresses);
// empty when the defaults (node IPs and loopback) apply.
func (s *Scenario) HostAddresses() []netip.Addr { return s.Config.HostAddresses }

// KubeProxyConfig translates config.yaml into kube-proxy v1.37's own
// configuration file (KubeProxyConfiguration v1alpha1) for a proxy mode.
// What config.yaml leaves at the default is left at kube-proxy's default.
// The masquerade settings go to both the iptables and the nftables
// section: kube-proxy keeps one per mode, and has no flag for the nftables
// ones. Conntrack sysctls are left alone, and kube-proxy's servers listen
// on the namespace's loopback. The same file is given to `kubectl
// svcproxy plan --config`, as a user auditing a kube-proxy node would.
func (s *Scenario) KubeProxyConfig(mode Mode, kubeconfig string) ([]byte, error) {
	return s.KubeProxyConfigV(mode, kubeconfig, 2)
}

// KubeProxyConfigV is KubeProxyConfig with kube-proxy's log verbosity: 2
// as kubeadm runs it, 4 to see it take its node's zone (WaitTopology).
// Verbosity changes no rule.
func (s *Scenario) KubeProxyConfigV(mode Mode, kubeconfig string, verbosity int) ([]byte, error) {
	c := s.Config.Config
	masq := map[string]any{"masqueradeAll": c.MasqueradeAll, "masqueradeBit": c.MasqueradeBit}
	iptables := map[string]any{"localhostNodePorts": c.LocalhostNodePorts}
	for k, v := range masq {
		iptables[k] = v
	}
	cfg := map[string]any{
		"apiVersion":         "kubeproxy.config.k8s.io/v1alpha1",
		"kind":               "KubeProxyConfiguration",
		"mode":               string(mode),
		"hostnameOverride":   s.Config.NodeName,
		"clientConnection":   map[string]any{"kubeconfig": kubeconfig},
		"metricsBindAddress": metricsAddr,
		"healthzBindAddress": healthzAddr,
		"oomScoreAdj":        0,
		"logging":            map[string]any{"verbosity": verbosity},
		"conntrack": map[string]any{
			"maxPerCore": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s",
			"tcpBeLiberal": c.ConntrackTCPBeLiberal,
		},
		"iptables": iptables,
		"nftables": masq,
	}
	if len(c.ClusterCIDRs) > 0 {
		var cidrs []string
		for _, p := range c.ClusterCIDRs {
			cidrs = append(cidrs, p.String())
		}
		cfg["clusterCIDR"] = strings.Join(cidrs, ",")
	}
	if c.DetectLocalMode != "" {
		cfg["detectLocalMode"] = string(c.DetectLocalMode)
	}
	cfg["detectLocal"] = map[string]any{"bridgeInterface": c.BridgeInterface, "interfaceNamePrefix": c.InterfaceNamePrefix}
	if len(c.NodePortAddresses) > 0 {
		cfg["nodePortAddresses"] = c.NodePortAddresses
	}
	return yaml.Marshal(cfg)
}

// RenderConfig is the renderer's configuration: config.yaml as it stands,
// with nfacct as kube-proxy found it. kube-proxy adds its nfacct matches
// when the kernel supports nfacct, and with them one rule: the NodePort
// rule for 127.0.0.0/8 that counts localhost NodePort traffic.
func (s *Scenario) RenderConfig(nfacct bool) render.Config {
	c := s.Config.Config
	c.NFAcct = nfacct
	return c
}
