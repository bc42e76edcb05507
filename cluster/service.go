package cluster

import (
	"net/netip"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	corev1 "k8s.io/api/core/v1"
)

// service is one proxied Service, validated once for both families
// (kube-proxy's newBaseServiceInfo, before the per-family split).
type service struct {
	namespace, name string
	clusterIPs      map[nodetable.Family]netip.Addr
	ports           []portSpec
	externalIPs     []netip.Addr
	lbVIPs          []netip.Addr
	sourceRanges    []netip.Prefix
	healthCheckPort int32
	affinityTimeout int32
	externalLocal   bool
	internalLocal   bool
}

type portSpec struct {
	name     string
	protocol nodetable.Protocol
	port     int32
	nodePort int32
}

// parseService returns the Service as kube-proxy sees it, or nil when
// kube-proxy does not proxy it (another proxy's label, headless,
// ExternalName) or it is too broken to use (an invalid clusterIP).
//
// What is invalid is treated as kube-proxy treats it where kube-proxy
// copes: invalid externalIPs, load-balancer IPs and source ranges are left
// out on their own (note that a Service whose only source range is invalid
// is then open to all, as in kube-proxy). Where kube-proxy would program
// garbage, we leave out the port (invalid port, nodePort or protocol) or
// the whole Service (invalid clusterIP).
func (b *builder) parseService(svc *corev1.Service) *service {
	if _, ok := svc.Labels[labelServiceProxyName]; ok {
		return nil
	}
	if headless(svc) || svc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	object := "service " + objectName(&svc.ObjectMeta)
	if !b.checkMeta(object, &svc.ObjectMeta, serviceName) || !b.checkServiceSpec(object, &svc.Spec) {
		return nil
	}
	clusterIPs, ok := b.clusterIPs(object, svc)
	if !ok {
		return nil
	}
	s := &service{
		namespace:     svc.Namespace,
		name:          svc.Name,
		clusterIPs:    clusterIPs,
		ports:         b.servicePorts(object, svc.Spec.Ports),
		externalIPs:   b.externalIPs(object, svc.Spec.ExternalIPs),
		lbVIPs:        b.loadBalancerVIPs(object, svc.Status.LoadBalancer.Ingress),
		sourceRanges:  b.sourceRanges(object, svc.Spec.LoadBalancerSourceRanges),
		internalLocal: svc.Spec.InternalTrafficPolicy != nil && *svc.Spec.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal,
	}
	svcType := svc.Spec.Type
	if svcType == "" {
		svcType = corev1.ServiceTypeClusterIP // the API default
	}
	// pkg/api/v1/service: ExternallyAccessible, ExternalPolicyLocal, NeedsHealthCheck.
	externallyAccessible := svcType == corev1.ServiceTypeLoadBalancer || svcType == corev1.ServiceTypeNodePort ||
		svcType == corev1.ServiceTypeClusterIP && len(svc.Spec.ExternalIPs) > 0
	s.externalLocal = externallyAccessible && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	if svcType == corev1.ServiceTypeLoadBalancer && s.externalLocal {
		if p := svc.Spec.HealthCheckNodePort; validPort(p) {
			s.healthCheckPort = p
		} else {
			b.warn(object, "invalid healthCheckNodePort %d for a LoadBalancer with externalTrafficPolicy Local: no health check", p)
		}
	}
	s.affinityTimeout = b.affinityTimeout(object, &svc.Spec)
	return s
}

// headless is kube-proxy's !IsServiceIPSet. A Service with only clusterIPs
// (which the API server refuses; Decode leaves it so) is not headless.
func headless(svc *corev1.Service) bool {
	primary := svc.Spec.ClusterIP
	if primary == "" && len(svc.Spec.ClusterIPs) > 0 {
		primary = svc.Spec.ClusterIPs[0]
	}
	return primary == "" || primary == corev1.ClusterIPNone
}

// clusterIPs maps each family to its clusterIP, as kube-proxy's
// GetClusterIPByFamily: spec.clusterIPs indexed like spec.ipFamilies, or,
// without ipFamilies, the family of each address. spec.clusterIP stands in
// for a missing spec.clusterIPs. (Without ipFamilies kube-proxy reads only
// spec.clusterIP; the API server always sets both, so the difference only
// shows in Snapshots built in code, where ours is the friendlier reading:
// Decode infers ipFamilies from clusterIPs as the API server does.)
func (b *builder) clusterIPs(object string, svc *corev1.Service) (map[nodetable.Family]netip.Addr, bool) {
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 {
		ips = []string{svc.Spec.ClusterIP}
	}
	byFamily := map[nodetable.Family]netip.Addr{}
	for i, s := range ips {
		ip, err := parseIP(s)
		if err != nil {
			b.warn(object, "invalid clusterIP %q: skipped", s)
			return nil, false
		}
		if why := unusableIP(ip, false); why != "" {
			b.warn(object, "clusterIP %q %s: skipped", s, why)
			return nil, false
		}
		family := nodetable.FamilyOf(ip)
		if len(svc.Spec.IPFamilies) > 0 {
			if i >= len(svc.Spec.IPFamilies) {
				break
			}
			if want := nodetable.Family(svc.Spec.IPFamilies[i]); want != family {
				b.warn(object, "clusterIP %q is not %s as spec.ipFamilies[%d] says: skipped", s, want, i)
				return nil, false
			}
		}
		if _, ok := byFamily[family]; !ok {
			byFamily[family] = ip
		}
	}
	return byFamily, true
}

// servicePorts validates spec.ports. Two ports with the same name and
// protocol collide in kube-proxy's ServicePortMap, where the later one wins.
func (b *builder) servicePorts(object string, ports []corev1.ServicePort) []portSpec {
	var out []portSpec
	for i, p := range ports {
		proto, ok := parseProtocol(string(p.Protocol))
		switch errs := portNameErrors(p.Name); {
		case len(errs) > 0:
			b.warn(object, "invalid ports[%d].name %q (%s): port skipped", i, p.Name, strings.Join(errs, "; "))
			continue
		case !ok:
			b.warn(object, "invalid ports[%d].protocol %q: port skipped", i, p.Protocol)
			continue
		case !validPort(p.Port):
			b.warn(object, "invalid ports[%d].port %d: port skipped", i, p.Port)
			continue
		case p.NodePort < 0 || p.NodePort > 65535:
			b.warn(object, "invalid ports[%d].nodePort %d: port skipped", i, p.NodePort)
			continue
		}
		spec := portSpec{name: p.Name, protocol: proto, port: p.Port, nodePort: p.NodePort}
		if j := indexPort(out, spec); j >= 0 {
			b.warn(object, "ports[%d] has the same name %q and protocol as an earlier port: replaces it", i, p.Name)
			out[j] = spec
			continue
		}
		out = append(out, spec)
	}
	return out
}

func indexPort(ports []portSpec, p portSpec) int {
	for i := range ports {
		if ports[i].name == p.name && ports[i].protocol == p.protocol {
			return i
		}
	}
	return -1
}

// externalIPs parses spec.externalIPs; kube-proxy skips invalid ones.
func (b *builder) externalIPs(object string, ips []string) []netip.Addr {
	var out []netip.Addr
	for i, s := range ips {
		ip, err := parseIP(s)
		if err != nil {
			if strings.TrimSpace(s) != "" {
				b.warn(object, "invalid externalIPs[%d] %q: ignored", i, s)
			}
			continue
		}
		if why := unusableIP(ip, true); why != "" {
			b.warn(object, "externalIPs[%d] %q %s: ignored", i, s, why)
			continue
		}
		out = append(out, ip)
	}
	return out
}

// loadBalancerVIPs is the status.loadBalancer.ingress IPs kube-proxy
// programs: hostname-only entries and ipMode Proxy are skipped.
func (b *builder) loadBalancerVIPs(object string, ingress []corev1.LoadBalancerIngress) []netip.Addr {
	var out []netip.Addr
	for i, ing := range ingress {
		if ing.IP == "" {
			continue
		}
		if ing.IPMode != nil && *ing.IPMode != corev1.LoadBalancerIPModeVIP {
			if *ing.IPMode != corev1.LoadBalancerIPModeProxy {
				b.warn(object, "unknown status.loadBalancer.ingress[%d].ipMode %q: ignored", i, *ing.IPMode)
			}
			continue
		}
		ip, err := parseIP(ing.IP)
		if err != nil {
			b.warn(object, "invalid status.loadBalancer.ingress[%d].ip %q: ignored", i, ing.IP)
			continue
		}
		if why := unusableIP(ip, false); why != "" {
			b.warn(object, "status.loadBalancer.ingress[%d].ip %q %s: ignored", i, ing.IP, why)
			continue
		}
		out = append(out, ip)
	}
	return out
}

// sourceRanges parses spec.loadBalancerSourceRanges, trimming spaces as
// kube-proxy does; invalid ones are skipped.
func (b *builder) sourceRanges(object string, ranges []string) []netip.Prefix {
	var out []netip.Prefix
	for i, s := range ranges {
		trimmed := strings.TrimSpace(s)
		if trimmed == "" {
			continue
		}
		p, err := parsePrefix(trimmed)
		if err != nil {
			b.warn(object, "invalid loadBalancerSourceRanges[%d] %q: ignored", i, s)
			continue
		}
		out = append(out, p)
	}
	return out
}

// affinityTimeout is the ClientIP affinity timeout, 0 without affinity.
func (b *builder) affinityTimeout(object string, spec *corev1.ServiceSpec) int32 {
	if spec.SessionAffinity != corev1.ServiceAffinityClientIP {
		return 0
	}
	cfg := spec.SessionAffinityConfig
	if cfg == nil || cfg.ClientIP == nil || cfg.ClientIP.TimeoutSeconds == nil {
		return defaultAffinityTimeoutSeconds
	}
	if t := *cfg.ClientIP.TimeoutSeconds; t > 0 {
		return t
	}
	b.warn(object, "invalid sessionAffinityConfig.clientIP.timeoutSeconds %d: using %d",
		*cfg.ClientIP.TimeoutSeconds, defaultAffinityTimeoutSeconds)
	return defaultAffinityTimeoutSeconds
}

// portsFor returns the Service's ports in family f, without endpoints; none
// when the Service has no clusterIP in f.
func (s *service) portsFor(f nodetable.Family) []nodetable.ServicePort {
	clusterIP, ok := s.clusterIPs[f]
	if !ok {
		return nil
	}
	ranges := inFamily(s.sourceRanges, f, func(p netip.Prefix) netip.Addr { return p.Addr() })
	for _, p := range ranges {
		if p.Bits() == 0 {
			ranges = nil // 0.0.0.0/0 or ::/0: open to all, no filter
			break
		}
	}
	externalIPs := inFamily(s.externalIPs, f, func(a netip.Addr) netip.Addr { return a })
	lbVIPs := inFamily(s.lbVIPs, f, func(a netip.Addr) netip.Addr { return a })
	out := make([]nodetable.ServicePort, 0, len(s.ports))
	for _, p := range s.ports {
		out = append(out, nodetable.ServicePort{
			Name:                     nodetable.ServicePortName{Namespace: s.namespace, Name: s.name, Port: p.name, Protocol: p.protocol},
			ClusterIP:                clusterIP,
			Port:                     p.port,
			NodePort:                 p.nodePort,
			ExternalIPs:              externalIPs,
			LoadBalancerVIPs:         lbVIPs,
			LoadBalancerSourceRanges: ranges,
			HealthCheckNodePort:      s.healthCheckPort,
			AffinityTimeoutSeconds:   s.affinityTimeout,
			InternalPolicyLocal:      s.internalLocal,
			ExternalPolicyLocal:      s.externalLocal,
		})
	}
	return out
}

func inFamily[T any](list []T, f nodetable.Family, addr func(T) netip.Addr) []T {
	var out []T
	for _, x := range list {
		if nodetable.FamilyOf(addr(x)) == f {
			out = append(out, x)
		}
	}
	return out
}
