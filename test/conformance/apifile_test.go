package conformance

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster/fromapi"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/userspace"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/repo"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testcluster"
)

// TestFileMeansWhatTheAPIServerMeans checks that a snapshot file means what
// the same objects mean in a cluster. For every golden scenario it creates
// the objects of input.yaml, exactly as written (nothing defaulted), in a
// real kube-apiserver, reads them back as the tool does (cluster/fromapi),
// and requires that the objects read from the file (cluster.Decode, which
// applies the API server's defaults) carry the same values in every field
// kube-proxy reads, and render byte for byte the same in every mode and
// both families.
//
// It needs only the API server (no root, no kube-proxy), so it runs
// wherever test/testcluster can.
func TestFileMeansWhatTheAPIServerMeans(t *testing.T) {
	// -short opts out of a slow test: not a missing prerequisite, so
	// a plain skip, also under CI.
	if testing.Short() {
		t.Skip("starts a real kube-apiserver and etcd")
	}
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	scenarios, err := LoadScenarios(root)
	if err != nil {
		t.Fatal(err)
	}
	c := testcluster.Start(t)
	objects := Objects{Client: c.Admin}
	for _, s := range scenarios {
		t.Run(s.Name, func(t *testing.T) {
			fromFile, err := s.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			fromAPI := loadThroughAPI(t, objects, s)
			compareObjects(t, fromFile, fromAPI)
			want, got := renderModes(t, s, fromAPI), renderModes(t, s, fromFile)
			for _, m := range renderedModes {
				if got[m.name] != want[m.name] {
					t.Errorf("%s: the file renders differently from the same objects read from the API server (-api +file):\n%s",
						m.name, cmp.Diff(want[m.name], got[m.name]))
				}
			}
		})
	}
}

// loadThroughAPI creates the scenario's objects as written and returns
// them as fromapi reads them, without the objects the API server makes on
// its own (default/kubernetes and the default ServiceCIDR).
func loadThroughAPI(t *testing.T, objects Objects, s *Scenario) *cluster.Snapshot {
	t.Helper()
	ctx := context.Background()
	raw, err := rawSnapshot(s.Input)
	if err != nil {
		t.Fatal(err)
	}
	if err := objects.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if err := objects.Load(ctx, raw); err != nil {
		t.Fatalf("the API server refuses the scenario's objects: %v", err)
	}
	if err := objects.WaitLoaded(ctx, Expect(raw)); err != nil {
		t.Fatal(err)
	}
	snap, err := fromapi.Snapshot(ctx, objects.Client, s.Config.NodeName)
	if err != nil {
		t.Fatal(err)
	}
	snap.Services = slices.DeleteFunc(snap.Services, func(svc corev1.Service) bool {
		return svc.Namespace == metav1.NamespaceDefault && svc.Name == "kubernetes"
	})
	snap.ServiceCIDRs = slices.DeleteFunc(snap.ServiceCIDRs, func(sc networkingv1.ServiceCIDR) bool {
		return sc.Name == defaultServiceCIDR
	})
	return snap
}

// rawSnapshot reads input.yaml with plain JSON decoding: no defaults, so
// that the API server sees the objects as a user would send them. Only
// the namespace is filled in, as kubectl does on the client side.
func rawSnapshot(input []byte) (*cluster.Snapshot, error) {
	snap := &cluster.Snapshot{}
	for _, doc := range bytes.Split(input, []byte("\n---\n")) {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, err
		}
		var err error
		switch tm.Kind {
		case "Node":
			snap.Nodes, err = appendDoc(snap.Nodes, doc, nil)
		case "Service":
			snap.Services, err = appendDoc(snap.Services, doc, func(o *corev1.Service) *metav1.ObjectMeta { return &o.ObjectMeta })
		case "EndpointSlice":
			snap.EndpointSlices, err = appendDoc(snap.EndpointSlices, doc,
				func(o *discoveryv1.EndpointSlice) *metav1.ObjectMeta { return &o.ObjectMeta })
		case "ServiceCIDR":
			snap.ServiceCIDRs, err = appendDoc(snap.ServiceCIDRs, doc, nil)
		case "":
			// an empty document
		default:
			err = fmt.Errorf("input.yaml: kind %q in a golden scenario", tm.Kind)
		}
		if err != nil {
			return nil, err
		}
	}
	return snap, nil
}

func appendDoc[T any](list []T, doc []byte, meta func(*T) *metav1.ObjectMeta) ([]T, error) {
	var obj T
	if err := yaml.Unmarshal(doc, &obj); err != nil {
		return nil, err
	}
	if meta != nil && meta(&obj).Namespace == "" {
		meta(&obj).Namespace = metav1.NamespaceDefault
	}
	return append(list, obj), nil
}

// compareObjects requires the same values, in the fields kube-proxy reads,
// in the objects read from the file and from the API server. Fields the
// API server fills in that kube-proxy does not read (metadata, the Node's
// other status) are left out.
func compareObjects(t *testing.T, file, api *cluster.Snapshot) {
	t.Helper()
	ignore := cmp.Options{
		cmpopts.IgnoreTypes(metav1.TypeMeta{}),
		cmpopts.IgnoreFields(metav1.ObjectMeta{}, "UID", "ResourceVersion", "Generation", "CreationTimestamp", "Finalizers"),
		cmpopts.IgnoreFields(corev1.Node{}, "Status"),
		cmpopts.IgnoreFields(networkingv1.ServiceCIDR{}, "Status"),
		cmpopts.EquateEmpty(),
	}
	check := func(what string, want, got any) {
		if diff := cmp.Diff(want, got, ignore); diff != "" {
			t.Errorf("%s differ (-api +file):\n%s", what, diff)
		}
	}
	check("Services", withoutHeadlessFamilies(api.Services), withoutHeadlessFamilies(file.Services))
	check("EndpointSlices", api.EndpointSlices, file.EndpointSlices)
	check("ServiceCIDRs", api.ServiceCIDRs, file.ServiceCIDRs)
	// fromapi reads the one Node; so does Build.
	for _, n := range api.Nodes {
		i := slices.IndexFunc(file.Nodes, func(f corev1.Node) bool { return f.Name == n.Name })
		if i < 0 {
			t.Errorf("Node %s: not in the file", n.Name)
			continue
		}
		// (The NodeSpec's taints come from an admission plugin; kube-proxy
		// reads only the pod CIDRs.)
		check("Node "+n.Name+" podCIDRs", []any{n.Spec.PodCIDR, n.Spec.PodCIDRs}, []any{file.Nodes[i].Spec.PodCIDR, file.Nodes[i].Spec.PodCIDRs})
		check("Node "+n.Name+" addresses", n.Status.Addresses, file.Nodes[i].Status.Addresses)
	}
}

// withoutHeadlessFamilies clears the ipFamilies of headless Services: the
// API server gives them the cluster's default family (and the other one,
// when dual-stack), which a file cannot know, and kube-proxy does not
// proxy headless Services.
func withoutHeadlessFamilies(services []corev1.Service) []corev1.Service {
	out := make([]corev1.Service, len(services))
	for i, svc := range services {
		if svc.Spec.ClusterIP == corev1.ClusterIPNone {
			svc.Spec = *svc.Spec.DeepCopy()
			svc.Spec.IPFamilies = nil
		}
		out[i] = svc
	}
	return out
}

// renderedMode is one mode's render and text form.
type renderedMode struct {
	name   string
	render func(w io.Writer, t *nodetable.Tables, cfg render.Config) error
}

// renderedModes render both families, as `kubectl svcproxy render` does.
var renderedModes = []renderedMode{
	{"iptables", func(w io.Writer, t *nodetable.Tables, cfg render.Config) error {
		return ipt.EncodeAll(w, perFamily(t, func(st *nodetable.ServiceTable) *ipt.Ruleset { return render.IPTables(st, cfg) }))
	}},
	{"nftables", func(w io.Writer, t *nodetable.Tables, cfg render.Config) error {
		return nft.EncodeAll(w, perFamily(t, func(st *nodetable.ServiceTable) *nft.Ruleset { return render.NFTables(st, cfg) }))
	}},
	{"ipvs", func(w io.Writer, t *nodetable.Tables, cfg render.Config) error {
		return ipvs.EncodeAll(w, perFamily(t, func(st *nodetable.ServiceTable) *ipvs.Ruleset {
			return render.IPVS(st, cfg, render.IPVSOptions{})
		}))
	}},
	{"userspace", func(w io.Writer, t *nodetable.Tables, cfg render.Config) error {
		return userspace.EncodeAll(w, perFamily(t, func(st *nodetable.ServiceTable) *userspace.Ruleset {
			return render.Userspace(st, cfg, render.UserspaceOptions{})
		}))
	}},
}

func perFamily[R any](t *nodetable.Tables, r func(*nodetable.ServiceTable) R) []R {
	var out []R
	for _, f := range families {
		out = append(out, r(t.ForFamily(f)))
	}
	return out
}

// renderModes builds snap's tables for the scenario's node and renders
// every mode's text.
func renderModes(t *testing.T, s *Scenario, snap *cluster.Snapshot) map[string]string {
	t.Helper()
	tables, _, err := cluster.Build(snap, s.ClusterConfig())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range renderedModes {
		var b bytes.Buffer
		if err := m.render(&b, tables, s.RenderConfig(false)); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		out[m.name] = b.String()
	}
	return out
}
