package render

import (
	"crypto/sha256"
	"encoding/base32"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// Fixed iptables chain names, as kube-proxy v1.37's iptables mode names
// them. iptables chain names are limited to 28 characters; the per-service
// chains are a 9-character prefix plus a 16-character hash.
const (
	ChainServices         = "KUBE-SERVICES"
	ChainExternalServices = "KUBE-EXTERNAL-SERVICES"
	ChainNodePorts        = "KUBE-NODEPORTS"
	ChainPostrouting      = "KUBE-POSTROUTING"
	ChainMarkMasq         = "KUBE-MARK-MASQ"
	ChainForward          = "KUBE-FORWARD"
	ChainProxyFirewall    = "KUBE-PROXY-FIREWALL"
	// ChainKubeletFirewall duplicates kubelet's anti-martian KUBE-FIREWALL chain.
	ChainKubeletFirewall = "KUBE-FIREWALL"

	PrefixServiceCluster = "KUBE-SVC-"
	PrefixServiceLocal   = "KUBE-SVL-"
	PrefixFirewall       = "KUBE-FW-"
	PrefixExternal       = "KUBE-EXT-"
	PrefixEndpoint       = "KUBE-SEP-"
)

// portProtoHash is kube-proxy's chain-name hash: the first 16 characters of
// the base32 (standard alphabet) SHA-256 of the concatenated parts.
func portProtoHash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return base32.StdEncoding.EncodeToString(sum[:])[:16]
}

// servicePortChains holds the per-service-port chain names, which share one hash.
type servicePortChains struct {
	cluster, local, firewall, external string
}

func chainsFor(name nodetable.ServicePortName) servicePortChains {
	h := portProtoHash(name.String(), name.Protocol.Lower())
	return servicePortChains{
		cluster:  PrefixServiceCluster + h,
		local:    PrefixServiceLocal + h,
		firewall: PrefixFirewall + h,
		external: PrefixExternal + h,
	}
}

// endpointChain returns the KUBE-SEP- chain of one endpoint of one service port.
func endpointChain(name nodetable.ServicePortName, ep nodetable.Endpoint) string {
	return PrefixEndpoint + portProtoHash(name.String(), name.Protocol.Lower(), ep.String())
}
