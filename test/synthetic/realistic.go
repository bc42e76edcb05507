package synthetic

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
)

// Realistic is Snapshot(n) with what a cluster's API server holds for
// objects made by `kubectl apply` and by the EndpointSlice controller,
// and `kubectl get -o yaml` prints: creation times, UIDs and resource
// versions, three to six labels and two to four annotations on each
// Service (kubectl.kubernetes.io/last-applied-configuration among them),
// managedFields, the Service's defaulted spec and its status, and for
// each EndpointSlice its generateName, owner reference, controller labels
// and annotation, and endpoint target references with UIDs. Snapshot(n)'s
// minimal objects are an input no cluster produces; the decoding
// benchmarks read these. Write them with WriteKubectlYAML and
// WriteKubectlJSON: the snapshot's own writers drop managedFields.
func Realistic(n int) *cluster.Snapshot {
	s := Snapshot(n)
	for i := range s.Services {
		realisticService(&s.Services[i], i)
		realisticSlice(&s.EndpointSlices[i], &s.Services[i], i)
	}
	return s
}

// created is when every synthetic object was made, give or take seconds.
var created = time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)

func uid(kind, i int) string {
	return fmt.Sprintf("%08x-%04x-4%03x-8000-%012x", i*2654435761&0xffffffff, kind, i&0xfff, i)
}

func realisticMeta(m *metav1.ObjectMeta, kind, i int) {
	m.UID = typesUID(uid(kind, i))
	m.ResourceVersion = fmt.Sprint(1000000 + 3*i + kind)
	m.CreationTimestamp = metav1.NewTime(created.Add(time.Duration(i) * time.Second))
}

func realisticService(svc *corev1.Service, i int) {
	name := svc.Name
	labels := []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/part-of", "app.kubernetes.io/version", "tier"}
	for _, l := range labels[:2+i%4] {
		svc.Labels[l] = fmt.Sprintf("%s-%d", name, len(l))
	}
	realisticMeta(&svc.ObjectMeta, 1, i)
	if i%2 == 0 {
		svc.Annotations["prometheus.io/scrape"] = "true"
	}
	if i%3 == 0 {
		svc.Annotations["example.com/runbook"] = "https://runbooks.example.com/" + svc.Namespace + "/" + name
	}
	svc.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = lastApplied(svc)
	svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
	svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	svc.Spec.IPFamilyPolicy = ptrTo(corev1.IPFamilyPolicySingleStack)
	svc.Spec.InternalTrafficPolicy = ptrTo(corev1.ServiceInternalTrafficPolicyCluster)
	svc.Spec.SessionAffinity = corev1.ServiceAffinityNone
	svc.ManagedFields = []metav1.ManagedFieldsEntry{{
		Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
		Time: &svc.CreationTimestamp, FieldsType: "FieldsV1",
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{".":{},` + fieldSet(svc.Annotations) + `},"f:labels":{".":{},` +
			fieldSet(svc.Labels) + `}},"f:spec":{"f:internalTrafficPolicy":{},"f:ports":{".":{},"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},` +
			`"f:name":{},"f:port":{},"f:protocol":{},"f:targetPort":{}}},"f:selector":{},"f:sessionAffinity":{},"f:type":{}}}`)},
	}}
}

// lastApplied is what `kubectl apply` stores of the Service: its
// manifest as JSON, compacted, with a newline at the end, which is what
// makes kubectl print it as a "|" block scalar.
func lastApplied(svc *corev1.Service) string {
	var labels []string
	for _, k := range sortedKeys(svc.Labels) {
		labels = append(labels, fmt.Sprintf("%q:%q", k, svc.Labels[k]))
	}
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"Service","metadata":{"annotations":{},"labels":{%s},"name":%q,"namespace":%q},`+
		`"spec":{"ports":[{"name":"http","port":80,"protocol":"TCP","targetPort":8080}],"selector":{"app":%q}}}`+"\n",
		strings.Join(labels, ","), svc.Name, svc.Namespace, svc.Name)
}

// fieldSet is the managedFields members of a map's keys.
func fieldSet(m map[string]string) string {
	var out []string
	for _, k := range sortedKeys(m) {
		out = append(out, fmt.Sprintf(`"f:%s":{}`, k))
	}
	return strings.Join(out, ",")
}

func realisticSlice(slice *discoveryv1.EndpointSlice, svc *corev1.Service, i int) {
	name := svc.Name
	slice.GenerateName = name + "-"
	slice.Generation = 3
	realisticMeta(&slice.ObjectMeta, 2, i)
	slice.Labels["app"] = name
	slice.Annotations = map[string]string{"endpoints.kubernetes.io/last-change-trigger-time": created.Add(time.Hour).Format(time.RFC3339)}
	slice.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: name, UID: svc.UID,
		Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true)}}
	for j := range slice.Endpoints {
		ref := slice.Endpoints[j].TargetRef
		ref.Name = fmt.Sprintf("%s-7d9f8c6b5-%05x", name, (i*10+j)*40503&0xfffff)
		ref.UID = typesUID(uid(3, i*10+j))
	}
	slice.ManagedFields = []metav1.ManagedFieldsEntry{{
		Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "discovery.k8s.io/v1",
		Time: &slice.CreationTimestamp, FieldsType: "FieldsV1",
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:addressType":{},"f:endpoints":{},"f:metadata":{"f:annotations":{".":{},` +
			`"f:endpoints.kubernetes.io/last-change-trigger-time":{}},"f:generateName":{},"f:labels":{".":{},` + fieldSet(slice.Labels) +
			`},"f:ownerReferences":{".":{},"k:{\"uid\":\"` + string(svc.UID) + `\"}":{}}},"f:ports":{}}`)},
	}}
}
