package kubeletlab

import "fmt"

// ClusterDomain is the cluster's DNS domain when it has cluster DNS, as
// kubeadm's default.
const ClusterDomain = "cluster.local"

// Options says how StartWith starts the lab.
type Options struct {
	// SandboxImage is the pause image, which must be among Images for
	// any pod to start.
	SandboxImage string
	// Images are OCI archives imported into every node's containerd
	// before kubelet starts.
	Images []string
	// Nodes is how many nodes run (0 is 1), each with its own containerd
	// and kubelet; the control plane runs on the first. Some of upstream's
	// Service tests need two.
	Nodes int
	// ClusterDNS, if set, is the address kubelet gives pods as their
	// nameserver (kubelet's clusterDNS, with clusterDomain ClusterDomain):
	// the ClusterIP of the cluster's DNS Service, which the test deploys
	// (test/clusterdns). Empty: pods get the node's resolv.conf.
	ClusterDNS string
}

// nodeResolvConf is the resolv.conf that kubelet reads as the node's
// (resolvConf), given to pods of dnsPolicy Default and, for its search
// path and options, to the others.
//
// The lab has no upstream DNS server. Without cluster DNS no pod looks a
// name up, and it names 127.0.0.1. With cluster DNS, the DNS server's own
// pod (dnsPolicy Default, as kubeadm deploys CoreDNS) forwards names
// outside the cluster to it, and 127.0.0.1 in that pod is the server
// itself: CoreDNS's loop plugin would see its probe come back and exit.
// So it names the outside neighbour, where nothing listens on port 53:
// such a name fails at once (SERVFAIL, the port unreachable), the
// Corefile stays kubeadm's, and the cluster's own names, all that
// Kubernetes' DNS tests need, resolve.
func nodeResolvConf(clusterDNS string) string {
	if clusterDNS == "" {
		return "nameserver 127.0.0.1\n"
	}
	return fmt.Sprintf("nameserver %s\n", OutsideIP)
}

// kubeletDNS is the part of kubelet's configuration for cluster DNS.
func kubeletDNS(clusterDNS string) string {
	if clusterDNS == "" {
		return ""
	}
	return fmt.Sprintf("clusterDNS:\n- %s\nclusterDomain: %s\n", clusterDNS, ClusterDomain)
}
