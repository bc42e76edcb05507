package cluster

import (
	"strings"

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
