package cluster

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A snapshot file is untrusted input: the names in it end up in rule
// comments and in the hashes of chain names, so every name that reaches
// the kernel is checked the way the API server checks it when the object
// is created, and an object the API server would refuse is skipped with a
// warning. (Names read from the API server always pass.)

// nameCheck is one of apimachinery's name validators: it returns the
// reasons a name is invalid, none when it is valid.
type nameCheck func(string) []string

// checkMeta reports whether an object's namespace (a DNS-1123 label) and
// name (checked by name) are ones the API server accepts, and warns about
// the object when they are not.
func (b *builder) checkMeta(object string, m *metav1.ObjectMeta, name nameCheck) bool {
	if errs := validation.IsDNS1123Label(m.Namespace); len(errs) > 0 {
		b.warn(object, "invalid metadata.namespace %q (%s): skipped", m.Namespace, strings.Join(errs, "; "))
		return false
	}
	if errs := name(m.Name); len(errs) > 0 {
		b.warn(object, "invalid metadata.name %q (%s): skipped", m.Name, strings.Join(errs, "; "))
		return false
	}
	return true
}

// serviceName is how the API server checks a Service's name (ValidateServiceName).
func serviceName(s string) []string { return validation.IsDNS1035Label(s) }

// endpointSliceName is how it checks an EndpointSlice's (ValidateEndpointSliceName).
func endpointSliceName(s string) []string { return validation.IsDNS1123Subdomain(s) }

// portNameErrors checks a Service or EndpointSlice port name: empty, or a
// DNS-1123 label.
func portNameErrors(s string) []string {
	if s == "" {
		return nil
	}
	return validation.IsDNS1123Label(s)
}

// checkServiceSpec reports whether the Service's enumerated fields, the
// ones the API server defaults (defaults.go), hold values the API server
// accepts (ValidateService), and warns about the Service when they do not.
// An empty value is accepted as its default, for snapshots built in code.
func (b *builder) checkServiceSpec(object string, spec *corev1.ServiceSpec) bool {
	reject := func(format string, args ...any) bool {
		b.warn(object, format+": skipped", args...)
		return false
	}
	switch spec.Type {
	case "", corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
	default:
		return reject("invalid spec.type %q", spec.Type)
	}
	switch spec.SessionAffinity {
	case "", corev1.ServiceAffinityNone, corev1.ServiceAffinityClientIP:
	default:
		return reject("invalid spec.sessionAffinity %q", spec.SessionAffinity)
	}
	// (externalTrafficPolicy on a Service that is not externally accessible
	// is refused on create today, but older clusters stored it, and
	// kube-proxy ignores it: so does parseService.)
	switch etp := spec.ExternalTrafficPolicy; etp {
	case "", corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal:
	default:
		return reject("invalid spec.externalTrafficPolicy %q", etp)
	}
	if itp := spec.InternalTrafficPolicy; itp != nil &&
		*itp != corev1.ServiceInternalTrafficPolicyCluster && *itp != corev1.ServiceInternalTrafficPolicyLocal {
		return reject("invalid spec.internalTrafficPolicy %q", *itp)
	}
	if p := spec.IPFamilyPolicy; p != nil {
		switch *p {
		case corev1.IPFamilyPolicySingleStack:
			if len(spec.ClusterIPs) > 1 || len(spec.IPFamilies) > 1 {
				return reject("spec.ipFamilyPolicy SingleStack with two clusterIPs or ipFamilies " +
					"(the API server's default when ipFamilyPolicy is left out)")
			}
		case corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack:
		default:
			return reject("invalid spec.ipFamilyPolicy %q", *p)
		}
	}
	return true
}
