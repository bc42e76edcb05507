package cli

// The types here spell out kube-proxy v1.37's KubeProxyConfiguration
// (kubeproxy.config.k8s.io/v1alpha1, the one version kube-proxy v1.37
// reads), field by field, so that a config file is checked against the
// whole schema: a field kube-proxy knows is accepted even where the tool
// has no use for it (clientConnection, conntrack, logging, ...), and a
// field it does not know is an error. They are written after the schema's
// JSON names rather than imported: the package that declares the real
// types pulls in component-base's feature gates, metrics and logging.
//
// Durations are strings ("30s"), which is how metav1.Duration is written;
// a field that takes a string or a number is an any.

// kubeProxyAPIVersion is the one apiVersion kube-proxy v1.37 reads.
const kubeProxyAPIVersion = "kubeproxy.config.k8s.io/v1alpha1"

// kubeProxyConfiguration is a KubeProxyConfiguration file.
type kubeProxyConfiguration struct {
	APIVersion                  string                 `json:"apiVersion"`
	Kind                        string                 `json:"kind"`
	FeatureGates                map[string]bool        `json:"featureGates"`
	ClientConnection            clientConnectionConfig `json:"clientConnection"`
	Logging                     loggingConfig          `json:"logging"`
	HostnameOverride            string                 `json:"hostnameOverride"`
	BindAddress                 string                 `json:"bindAddress"`
	HealthzBindAddress          string                 `json:"healthzBindAddress"`
	MetricsBindAddress          string                 `json:"metricsBindAddress"`
	BindAddressHardFail         bool                   `json:"bindAddressHardFail"`
	EnableProfiling             bool                   `json:"enableProfiling"`
	ShowHiddenMetricsForVersion string                 `json:"showHiddenMetricsForVersion"`
	Mode                        string                 `json:"mode"`
	IPTables                    iptablesConfig         `json:"iptables"`
	IPVS                        ipvsConfig             `json:"ipvs"`
	NFTables                    nftablesConfig         `json:"nftables"`
	Winkernel                   winkernelConfig        `json:"winkernel"`
	DetectLocalMode             string                 `json:"detectLocalMode"`
	DetectLocal                 detectLocalConfig      `json:"detectLocal"`
	ClusterCIDR                 string                 `json:"clusterCIDR"`
	NodePortAddresses           []string               `json:"nodePortAddresses"`
	OOMScoreAdj                 *int32                 `json:"oomScoreAdj"`
	Conntrack                   conntrackConfig        `json:"conntrack"`
	ConfigSyncPeriod            string                 `json:"configSyncPeriod"`
	PortRange                   string                 `json:"portRange"`
	WindowsRunAsService         bool                   `json:"windowsRunAsService"`
}

// syncPeriods are a mode section's sync periods.
type syncPeriods struct {
	SyncPeriod    string `json:"syncPeriod"`
	MinSyncPeriod string `json:"minSyncPeriod"`
}

type iptablesConfig struct {
	MasqueradeBit      *int32 `json:"masqueradeBit"`
	MasqueradeAll      *bool  `json:"masqueradeAll"`
	LocalhostNodePorts *bool  `json:"localhostNodePorts"`
	syncPeriods
}

type nftablesConfig struct {
	MasqueradeBit *int32 `json:"masqueradeBit"`
	MasqueradeAll *bool  `json:"masqueradeAll"`
	syncPeriods
}

type ipvsConfig struct {
	syncPeriods
	Scheduler     string   `json:"scheduler"`
	ExcludeCIDRs  []string `json:"excludeCIDRs"`
	StrictARP     *bool    `json:"strictARP"`
	TCPTimeout    string   `json:"tcpTimeout"`
	TCPFinTimeout string   `json:"tcpFinTimeout"`
	UDPTimeout    string   `json:"udpTimeout"`
}

type detectLocalConfig struct {
	BridgeInterface     string `json:"bridgeInterface"`
	InterfaceNamePrefix string `json:"interfaceNamePrefix"`
}

type conntrackConfig struct {
	MaxPerCore            *int32 `json:"maxPerCore"`
	Min                   *int32 `json:"min"`
	TCPEstablishedTimeout string `json:"tcpEstablishedTimeout"`
	TCPCloseWaitTimeout   string `json:"tcpCloseWaitTimeout"`
	TCPBeLiberal          bool   `json:"tcpBeLiberal"`
	UDPTimeout            string `json:"udpTimeout"`
	UDPStreamTimeout      string `json:"udpStreamTimeout"`
}

type winkernelConfig struct {
	NetworkName           string `json:"networkName"`
	SourceVip             string `json:"sourceVip"`
	EnableDSR             bool   `json:"enableDSR"`
	RootHnsEndpointName   string `json:"rootHnsEndpointName"`
	ForwardHealthCheckVip bool   `json:"forwardHealthCheckVip"`
}

// clientConnectionConfig is component-base's ClientConnectionConfiguration.
type clientConnectionConfig struct {
	Kubeconfig         string  `json:"kubeconfig"`
	AcceptContentTypes string  `json:"acceptContentTypes"`
	ContentType        string  `json:"contentType"`
	QPS                float32 `json:"qps"`
	Burst              int32   `json:"burst"`
}

// loggingConfig is component-base's LoggingConfiguration (logs/api/v1).
type loggingConfig struct {
	Format         string `json:"format"`
	FlushFrequency any    `json:"flushFrequency"`
	Verbosity      uint32 `json:"verbosity"`
	VModule        []struct {
		FilePattern string `json:"filePattern"`
		Verbosity   uint32 `json:"verbosity"`
	} `json:"vmodule"`
	Options struct {
		Text outputRoutingConfig `json:"text"`
		JSON outputRoutingConfig `json:"json"`
	} `json:"options"`
}

type outputRoutingConfig struct {
	SplitStream    bool `json:"splitStream"`
	InfoBufferSize any  `json:"infoBufferSize"`
}
