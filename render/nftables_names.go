package render

import (
	"crypto/sha256"
	"encoding/base32"
	"strconv"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// Fixed nftables names, as kube-proxy v1.37's nftables mode names them. All
// live in the one table NFTablesTable, so they carry no "kube-" prefix.
const (
	// NFTablesTable is the table kube-proxy owns in the ip and ip6 families.
	NFTablesTable        = "kube-proxy"
	nftTableComment      = "rules for kube-proxy"
	nftFilterPreDNATPre  = "filter-prerouting-pre-dnat"
	nftFilterPreDNATOut  = "filter-output-pre-dnat"
	nftFilterInput       = "filter-input"
	nftFilterForward     = "filter-forward"
	nftFilterOutput      = "filter-output"
	nftNATPrerouting     = "nat-prerouting"
	nftNATOutput         = "nat-output"
	nftNATPostrouting    = "nat-postrouting"
	nftServicesChain     = "services"
	nftServiceIPsMap     = "service-ips"
	nftServiceNodePorts  = "service-nodeports"
	nftNodePortIPsSet    = "nodeport-ips"
	nftClusterIPsSet     = "cluster-ips"
	nftServiceEPCheck    = "service-endpoints-check"
	nftNodePortEPCheck   = "nodeport-endpoints-check"
	nftNoEndpointSvcMap  = "no-endpoint-services"
	nftNoEndpointNPMap   = "no-endpoint-nodeports"
	nftRejectChain       = "reject-chain"
	nftClusterIPsCheck   = "cluster-ips-check"
	nftFirewallIPsMap    = "firewall-ips"
	nftFirewallCheck     = "firewall-check"
	nftMasqueradingChain = "masquerading"
	nftHairpinSet        = "hairpin-connections"

	// Per-service and per-endpoint prefixes; kube-proxy keeps them at most
	// nftChainPrefixMax characters, so that prefix plus hashed base fits
	// nft.NameLengthMax.
	NFTPrefixService  = "service-"
	NFTPrefixLocal    = "local-"
	NFTPrefixExternal = "external-"
	NFTPrefixFirewall = "firewall-"
	NFTPrefixEndpoint = "endpoint-"
	NFTPrefixAffinity = "affinity-"

	nftChainPrefixMax = 16
	nftNameBaseMax    = nft.NameLengthMax - nftChainPrefixMax // 240
)

// nftHashAndTruncate is kube-proxy's hashAndTruncate: the first 8
// characters of the base32 SHA-256 of name, "-", name, cut to 240
// characters with "..." at the end when longer.
func nftHashAndTruncate(name string) string {
	sum := sha256.Sum256([]byte(name))
	s := base32.StdEncoding.EncodeToString(sum[:])[:8] + "-" + name
	if len(s) > nftNameBaseMax {
		s = s[:nftNameBaseMax-3] + "..."
	}
	return s
}

// nftServicePortBase is servicePortChainNameBase: "HASH-ns/svc/proto/port".
func nftServicePortBase(n nodetable.ServicePortName) string {
	return nftHashAndTruncate(n.Namespace + "/" + n.Name + "/" + n.Protocol.Lower() + "/" + n.Port)
}

// nftEndpointBase is servicePortEndpointChainNameBase:
// "HASH-ns/svc/proto/port__ip/port", with an IPv6 address's colons as dots.
func nftEndpointBase(n nodetable.ServicePortName, ep nodetable.Endpoint) string {
	ip := strings.ReplaceAll(ep.IP.String(), ":", ".")
	return nftHashAndTruncate(n.Namespace + "/" + n.Name + "/" + n.Protocol.Lower() + "/" + n.Port +
		"__" + ip + "/" + strconv.Itoa(int(ep.Port)))
}

// nftServiceChains are the per-service-port chain names.
type nftServiceChains struct {
	cluster, local, external, firewall string
}

func nftChainsFor(n nodetable.ServicePortName) nftServiceChains {
	base := nftServicePortBase(n)
	return nftServiceChains{
		cluster:  NFTPrefixService + base,
		local:    NFTPrefixLocal + base,
		external: NFTPrefixExternal + base,
		firewall: NFTPrefixFirewall + base,
	}
}

// truncateNFTComment is truncateNFTablesComment: comments are cut to
// nft.CommentLengthMax bytes.
func truncateNFTComment(s string) string {
	if len(s) > nft.CommentLengthMax {
		return s[:nft.CommentLengthMax]
	}
	return s
}
