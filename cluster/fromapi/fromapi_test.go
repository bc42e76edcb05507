package fromapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func apiObjects() []runtime.Object {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate}}
	return []runtime.Object{
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", ManagedFields: managed}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}},
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns2", ManagedFields: managed},
			Spec:       corev1.ServiceSpec{ClusterIP: "10.96.0.2", Ports: []corev1.ServicePort{{Port: 80}}},
		},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns1"}},
		&discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "web-x", Namespace: "ns1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
			AddressType: discoveryv1.AddressTypeIPv4,
		},
		&networkingv1.ServiceCIDR{
			ObjectMeta: metav1.ObjectMeta{Name: "kubernetes"},
			Spec:       networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.96.0.0/16"}},
		},
	}
}

func TestFromAPI(t *testing.T) {
	client := fake.NewClientset(apiObjects()...)
	s, err := Snapshot(context.Background(), client, "node-1")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Node node-1", "ServiceCIDR kubernetes", "Service ns1/web", "Service ns2/web", "EndpointSlice ns1/web-x"}
	if diff := cmp.Diff(want, names(s)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if s.Nodes[0].ManagedFields != nil || s.Services[1].ManagedFields != nil {
		t.Error("managedFields kept")
	}
	if s.Services[0].Kind != "Service" || s.EndpointSlices[0].APIVersion != "discovery.k8s.io/v1" {
		t.Errorf("type meta not set: %v, %v", s.Services[0].TypeMeta, s.EndpointSlices[0].TypeMeta)
	}
	if len(s.Warnings) != 0 {
		t.Errorf("warnings: %v", s.Warnings)
	}

	var listed []string
	for _, a := range client.Actions() {
		switch a := a.(type) {
		case k8stesting.ListActionImpl:
			listed = append(listed, a.GetResource().Resource)
			if a.ListOptions.ResourceVersion != "0" {
				t.Errorf("list %s: resourceVersion %q, want \"0\"", a.GetResource().Resource, a.ListOptions.ResourceVersion)
			}
			if a.GetNamespace() != "" {
				t.Errorf("list %s in namespace %q, want all", a.GetResource().Resource, a.GetNamespace())
			}
		case k8stesting.GetActionImpl:
			if a.GetResource().Resource != "nodes" || a.GetName() != "node-1" {
				t.Errorf("unexpected get %s %s", a.GetResource().Resource, a.GetName())
			}
		default:
			t.Errorf("unexpected action %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	if diff := cmp.Diff([]string{"services", "endpointslices", "servicecidrs"}, listed); diff != "" {
		t.Errorf("lists (-want +got):\n%s", diff)
	}
}

func TestFromAPIErrors(t *testing.T) {
	gr := func(resource string) schema.GroupResource { return schema.GroupResource{Resource: resource} }
	tests := []struct {
		name     string
		node     string
		resource string // which list fails
		err      error
		wantErr  string
		warning  string
	}{{
		name:    "missing node",
		node:    "node-9",
		wantErr: `node "node-9" not found`,
	}, {
		name:    "no node name",
		wantErr: "no node name given",
	}, {
		name:     "services",
		node:     "node-1",
		resource: "services",
		err:      apierrors.NewForbidden(gr("services"), "", errors.New("rbac")),
		wantErr:  "list services: ",
	}, {
		name:     "endpointslices",
		node:     "node-1",
		resource: "endpointslices",
		err:      apierrors.NewInternalError(errors.New("etcd timeout")),
		wantErr:  "list endpointslices: ",
	}, {
		name:     "servicecidrs: server error",
		node:     "node-1",
		resource: "servicecidrs",
		err:      apierrors.NewServiceUnavailable("down"),
		wantErr:  "list servicecidrs: ",
	}, {
		name:     "servicecidrs: API not served",
		node:     "node-1",
		resource: "servicecidrs",
		err:      apierrors.NewNotFound(gr("servicecidrs"), ""),
		warning:  "servicecidrs: cannot list (",
	}, {
		name:     "servicecidrs: forbidden",
		node:     "node-1",
		resource: "servicecidrs",
		err:      apierrors.NewForbidden(gr("servicecidrs"), "", errors.New("rbac")),
		warning:  "servicecidrs: cannot list (",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(apiObjects()...)
			if tt.resource != "" {
				client.PrependReactor("list", tt.resource, func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, tt.err
				})
			}
			s, err := Snapshot(context.Background(), client, tt.node)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want prefix %q", err, tt.wantErr)
				}
				if tt.name == "missing node" && (!cluster.IsNodeNotFound(err) || !apierrors.IsNotFound(err) || err.Error() != tt.wantErr) {
					t.Errorf("missing node: err = %v, IsNodeNotFound %v, apierrors.IsNotFound %v", err, cluster.IsNodeNotFound(err), apierrors.IsNotFound(err))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(s.ServiceCIDRs) != 0 || len(s.Warnings) != 1 || !strings.HasPrefix(s.Warnings[0].String(), tt.warning) {
				t.Errorf("ServiceCIDRs %v, warnings %v", s.ServiceCIDRs, s.Warnings)
			}
		})
	}
}

// A snapshot read from the API builds like one read from a file.
func TestFromAPIBuilds(t *testing.T) {
	s, err := Snapshot(context.Background(), fake.NewClientset(apiObjects()...), "node-1")
	if err != nil {
		t.Fatal(err)
	}
	tables, _, err := cluster.Build(s, cluster.Config{NodeName: "node-1"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ns2/web/TCP"}, portNames(tables.IPv4.Ports)); diff != "" {
		t.Errorf("ports (-want +got):\n%s", diff)
	}
}

func portNames(ports []nodetable.ServicePort) []string {
	var out []string
	for _, p := range ports {
		out = append(out, p.Name.String()+"/"+string(p.Name.Protocol))
	}
	return out
}

// names lists the snapshot's objects as "Kind namespace/name", in order.
func names(s *cluster.Snapshot) []string {
	var out []string
	add := func(kind string, m metav1.ObjectMeta) {
		if m.Namespace == "" {
			out = append(out, kind+" "+m.Name)
		} else {
			out = append(out, kind+" "+m.Namespace+"/"+m.Name)
		}
	}
	for _, o := range s.Nodes {
		add("Node", o.ObjectMeta)
	}
	for _, o := range s.ServiceCIDRs {
		add("ServiceCIDR", o.ObjectMeta)
	}
	for _, o := range s.Services {
		add("Service", o.ObjectMeta)
	}
	for _, o := range s.EndpointSlices {
		add("EndpointSlice", o.ObjectMeta)
	}
	return out
}

// TestFromAPIReportsLists: SnapshotReporting tells of each list as it
// arrives, with its kind and count, in the order they are listed.
func TestFromAPIReportsLists(t *testing.T) {
	var got []string
	_, err := SnapshotReporting(context.Background(), fake.NewClientset(apiObjects()...), "node-1", func(kind string, n int) {
		got = append(got, fmt.Sprintf("%d %s", n, kind))
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"2 Service", "1 EndpointSlice"}, got); diff != "" {
		t.Errorf("reported (-want +got):\n%s", diff)
	}
}
