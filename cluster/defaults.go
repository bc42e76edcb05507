package cluster

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// A snapshot file must mean what it would mean in the cluster. Objects read
// from the API server have been through the API server's defaulting when
// they were created: the v1 defaulting functions, and for Services the
// registry's create path (ClusterIP normalisation, IP family inference,
// allocation). Objects read from a file have not: Decode's scheme has no
// defaulting functions. So Decode applies the rules below to every object
// it reads, for every field kube-proxy reads, and the file then builds and
// renders as the same objects created through the API server would.
//
// The rules are written from the API server's behaviour in Kubernetes
// v1.37 (k8s.io/kubernetes pkg/apis/*/v1/defaults.go and
// pkg/registry/core/service); each says which rule it mirrors. They only
// fill in fields left empty, never change a value that is set, so a
// snapshot taken from the API server (already defaulted) is unchanged.
//
// What the API server allocates (a ClusterIP, a NodePort, the second
// ClusterIP of a dual-stack Service) a file cannot supply: the value would
// depend on the cluster's allocator. Those fields are left empty, the
// object is read as it stands, and a warning says what the cluster would
// have done. Objects the API server would reject are not defaulted into
// validity: Build skips them with a warning, as before.

// defaultService applies the API server's Service defaults in place and
// returns a warning for each value the API server would allocate.
func defaultService(svc *corev1.Service) []string {
	defaultSessionAffinity(&svc.Spec)
	// SetDefaults_Service: an empty type is ClusterIP.
	if svc.Spec.Type == "" {
		svc.Spec.Type = corev1.ServiceTypeClusterIP
	}
	for i := range svc.Spec.Ports {
		defaultServicePort(&svc.Spec.Ports[i])
	}
	defaultTrafficPolicies(svc)
	defaultLoadBalancer(svc)
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		// The registry allocates nothing for ExternalName Services and
		// leaves their IP fields alone; kube-proxy ignores them.
		return nil
	}
	normalizeClusterIPs(&svc.Spec)
	defaultIPFamilyPolicy(&svc.Spec)
	inferIPFamilies(&svc.Spec)
	return allocationWarnings(svc)
}

// defaultSessionAffinity mirrors SetDefaults_Service's session affinity
// rules: an empty sessionAffinity is None; None drops any
// sessionAffinityConfig; ClientIP without a timeout gets the default
// timeout of 10800 seconds (v1.DefaultClientIPServiceAffinitySeconds).
func defaultSessionAffinity(spec *corev1.ServiceSpec) {
	switch spec.SessionAffinity {
	case "":
		spec.SessionAffinity = corev1.ServiceAffinityNone
		spec.SessionAffinityConfig = nil
	case corev1.ServiceAffinityNone:
		spec.SessionAffinityConfig = nil
	case corev1.ServiceAffinityClientIP:
		cfg := spec.SessionAffinityConfig
		if cfg == nil || cfg.ClientIP == nil || cfg.ClientIP.TimeoutSeconds == nil {
			timeout := int32(corev1.DefaultClientIPServiceAffinitySeconds)
			spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{
				ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: &timeout},
			}
		}
	}
}

// defaultServicePort mirrors SetDefaults_Service's loop over spec.ports:
// an empty protocol is TCP, and a targetPort of 0 or "" is the port's own
// number.
func defaultServicePort(p *corev1.ServicePort) {
	if p.Protocol == "" {
		p.Protocol = corev1.ProtocolTCP
	}
	if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
		p.TargetPort = intstr.FromInt32(p.Port)
	}
}

// defaultTrafficPolicies mirrors SetDefaults_Service's traffic policy
// rules: an externally accessible Service (NodePort, LoadBalancer, or
// ClusterIP with externalIPs) without externalTrafficPolicy gets Cluster;
// a ClusterIP, NodePort or LoadBalancer Service without
// internalTrafficPolicy gets Cluster.
func defaultTrafficPolicies(svc *corev1.Service) {
	if externallyAccessible(svc) && svc.Spec.ExternalTrafficPolicy == "" {
		svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if svc.Spec.InternalTrafficPolicy == nil {
		switch svc.Spec.Type {
		case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
			cluster := corev1.ServiceInternalTrafficPolicyCluster
			svc.Spec.InternalTrafficPolicy = &cluster
		}
	}
}

// externallyAccessible is pkg/api/v1/service's ExternallyAccessible: the
// Service takes traffic from outside the cluster.
func externallyAccessible(svc *corev1.Service) bool {
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
		return true
	case corev1.ServiceTypeClusterIP:
		return len(svc.Spec.ExternalIPs) > 0
	}
	return false
}

// defaultLoadBalancer mirrors SetDefaults_Service's LoadBalancer rules:
// allocateLoadBalancerNodePorts defaults to true, and every
// status.loadBalancer.ingress entry with an IP and no ipMode gets ipMode
// VIP. (The status is kept as the file has it: on create the API server
// clears it, and the cloud controller writes it through the status
// subresource, which applies the same defaults.)
func defaultLoadBalancer(svc *corev1.Service) {
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return
	}
	if svc.Spec.AllocateLoadBalancerNodePorts == nil {
		allocate := true
		svc.Spec.AllocateLoadBalancerNodePorts = &allocate
	}
	for i := range svc.Status.LoadBalancer.Ingress {
		ing := &svc.Status.LoadBalancer.Ingress[i]
		if ing.IP != "" && ing.IPMode == nil {
			vip := corev1.LoadBalancerIPModeVIP
			ing.IPMode = &vip
		}
	}
}

// normalizeClusterIPs mirrors the Service registry's normalizeClusterIPs on
// create: a clusterIP without clusterIPs gives clusterIPs [clusterIP]. (The
// API server rejects clusterIPs without clusterIP; Build reads that case
// as if clusterIP were clusterIPs[0], so it is left as it is.)
func normalizeClusterIPs(spec *corev1.ServiceSpec) {
	if spec.ClusterIP != "" && len(spec.ClusterIPs) == 0 {
		spec.ClusterIPs = []string{spec.ClusterIP}
	}
}

// defaultIPFamilyPolicy mirrors the registry's initIPFamilyFields on
// create: without ipFamilyPolicy, a headless Service without selector is
// RequireDualStack and every other Service is SingleStack. (So two
// clusterIPs without a policy are rejected, as the API server rejects
// them: see validServiceSpec.)
func defaultIPFamilyPolicy(spec *corev1.ServiceSpec) {
	if spec.IPFamilyPolicy != nil {
		return
	}
	policy := corev1.IPFamilyPolicySingleStack
	if spec.ClusterIP == corev1.ClusterIPNone && len(spec.Selector) == 0 {
		policy = corev1.IPFamilyPolicyRequireDualStack
	}
	spec.IPFamilyPolicy = &policy
}

// inferIPFamilies mirrors initIPFamilyFields' inference of ipFamilies from
// clusterIPs: each clusterIP without a corresponding ipFamilies entry adds
// its own family, up to the first "None". An address that does not parse
// stops the inference; Build reports it. (The families the registry adds
// beyond the clusterIPs, from the cluster's configuration, are not
// inferred: see allocationWarnings.)
func inferIPFamilies(spec *corev1.ServiceSpec) {
	for i, s := range spec.ClusterIPs {
		if s == corev1.ClusterIPNone {
			return
		}
		if i < len(spec.IPFamilies) {
			continue
		}
		ip, err := parseIP(s)
		if err != nil {
			return
		}
		family := corev1.IPv4Protocol
		if ip.Is6() {
			family = corev1.IPv6Protocol
		}
		spec.IPFamilies = append(spec.IPFamilies, family)
	}
}

// allocationWarnings says what the API server would allocate on create and
// a file cannot know (the registry's allocClusterIPs, initIPFamilyFields
// and initNodePorts). Nothing is made up in its place:
//
//   - no clusterIP (and no clusterIPs) on a Service that needs one: the
//     server would allocate one from its Service CIDR. Without it the
//     Service reads as headless, so it is not proxied, as before;
//   - a dual-stack ipFamilyPolicy with one clusterIP: a dual-stack cluster
//     would allocate one of the other family (a single-stack one would
//     reject RequireDualStack). The Service is proxied in the one family;
//   - no nodePort on a port of a NodePort Service, or of a LoadBalancer
//     with allocateLoadBalancerNodePorts: the server would allocate one
//     from its NodePort range. The port gets no NodePort rules.
//
// (A missing healthCheckNodePort, allocated for a LoadBalancer with
// externalTrafficPolicy Local, is reported by Build.)
func allocationWarnings(svc *corev1.Service) []string {
	spec := &svc.Spec
	if spec.ClusterIP == "" && len(spec.ClusterIPs) == 0 {
		return []string{"no spec.clusterIP: the API server would allocate one, which a file cannot know: not proxied"}
	}
	var out []string
	if spec.ClusterIP != corev1.ClusterIPNone && len(spec.ClusterIPs) == 1 &&
		spec.IPFamilyPolicy != nil && *spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack {
		out = append(out, fmt.Sprintf("ipFamilyPolicy %s with one clusterIP: a dual-stack cluster would allocate a second one, "+
			"which a file cannot know: proxied in one family", *spec.IPFamilyPolicy))
	}
	needsNodePorts := spec.Type == corev1.ServiceTypeNodePort ||
		spec.Type == corev1.ServiceTypeLoadBalancer && (spec.AllocateLoadBalancerNodePorts == nil || *spec.AllocateLoadBalancerNodePorts)
	if spec.ClusterIP == corev1.ClusterIPNone || !needsNodePorts {
		return out
	}
	for i, p := range spec.Ports {
		if p.NodePort == 0 {
			out = append(out, fmt.Sprintf("ports[%d] has no nodePort: the API server would allocate one, "+
				"which a file cannot know: no NodePort rules for it", i))
		}
	}
	return out
}

// defaultEndpointSlice mirrors pkg/apis/discovery/v1's
// SetDefaults_EndpointPort: a port without a name gets the name "" (so it
// matches a Service's unnamed port), and a port without a protocol gets
// TCP. Nothing else in an EndpointSlice is defaulted: in particular
// endpoint conditions stay unset, and kube-proxy reads an unset ready or
// serving as true.
func defaultEndpointSlice(slice *discoveryv1.EndpointSlice) {
	for i := range slice.Ports {
		p := &slice.Ports[i]
		if p.Name == nil {
			name := ""
			p.Name = &name
		}
		if p.Protocol == nil {
			tcp := corev1.ProtocolTCP
			p.Protocol = &tcp
		}
	}
}

// defaultNode mirrors the v1 NodeSpec conversion the API server applies on
// every write and read: spec.podCIDR and spec.podCIDRs are kept in step.
// A podCIDR without podCIDRs gives podCIDRs [podCIDR]; podCIDRs without
// podCIDR give podCIDR podCIDRs[0]; and when both are set and podCIDR is
// not podCIDRs[0], podCIDR wins and podCIDRs becomes [podCIDR]. (The
// status defaults, allocatable from capacity, are not read by kube-proxy.)
func defaultNode(node *corev1.Node) {
	spec := &node.Spec
	switch {
	case spec.PodCIDR != "" && len(spec.PodCIDRs) == 0:
		spec.PodCIDRs = []string{spec.PodCIDR}
	case spec.PodCIDR != "" && spec.PodCIDR != spec.PodCIDRs[0]:
		spec.PodCIDRs = []string{spec.PodCIDR}
	case spec.PodCIDR == "" && len(spec.PodCIDRs) > 0:
		spec.PodCIDR = spec.PodCIDRs[0]
	}
}

// defaultServiceCIDR is a no-op, on purpose: networking/v1 has no defaults
// for ServiceCIDR, and the registry only clears its status on create.
// kube-proxy reads spec.cidrs alone.
func defaultServiceCIDR(*networkingv1.ServiceCIDR) {}
