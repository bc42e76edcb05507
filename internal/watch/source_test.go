package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster/fromapi"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/healthcheck"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testcluster"
)

// TestAgainstAPIServer checks the informers' snapshot and what the start
// makes of the API server's refusals against a real kube-apiserver with RBAC.
func TestAgainstAPIServer(t *testing.T) {
	// -short opts out of a slow test: not a missing prerequisite, so
	// a plain skip, also under CI.
	if testing.Short() {
		t.Skip("starts a real kube-apiserver and etcd")
	}
	c := testcluster.Start(t)
	createObjects(t, c.Admin)
	t.Run("SnapshotMatchesFromAPI", func(t *testing.T) { testSnapshotMatchesFromAPI(t, c) })
	t.Run("Startup", func(t *testing.T) { testStartup(t, c) })
}

// createObjects writes node1 and node2, web with an EndpointSlice, and
// Services that kube-proxy's informers filter out: a headless one, one
// of another proxy, each with a slice.
func createObjects(t *testing.T, client kubernetes.Interface) {
	t.Helper()
	ctx := t.Context()
	for _, name := range []string{"node1", "node2"} {
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelTopologyZone: "z-" + name}},
			Spec:       corev1.NodeSpec{PodCIDR: "10.244.0.0/24"},
		}
		created, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.77." + name[4:]}}
		if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	svc := func(name, clusterIP string, labels map[string]string) {
		s := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
			Spec: corev1.ServiceSpec{ClusterIP: clusterIP, Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP},
			}},
		}
		if _, err := client.CoreV1().Services("default").Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		sliceLabels := map[string]string{discoveryv1.LabelServiceName: name}
		for k, v := range labels {
			sliceLabels[k] = v
		}
		if clusterIP == corev1.ClusterIPNone {
			sliceLabels[corev1.IsHeadlessService] = ""
		}
		createSlice(t, client, name, sliceLabels, "10.244.0.11", "10.244.1.12")
	}
	svc("web", "10.96.0.10", nil)
	svc("db", corev1.ClusterIPNone, nil)
	svc("other-proxy", "10.96.0.20", map[string]string{labelServiceProxyName: "someone-else"})
}

// createSlice writes the EndpointSlice name-1 of Service name, with ready
// endpoints on node1 and node2 in turn.
func createSlice(t *testing.T, client kubernetes.Interface, name string, labels map[string]string, ips ...string) {
	t.Helper()
	port, proto := int32(8080), corev1.ProtocolTCP
	portName, ready := "http", true
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name + "-1", Namespace: "default", Labels: labels},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port, Protocol: &proto}},
	}
	for i, ip := range ips {
		node := fmt.Sprintf("node%d", i%2+1)
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
			Addresses: []string{ip}, NodeName: &node, Conditions: discoveryv1.EndpointConditions{Ready: &ready},
		})
	}
	if _, err := client.DiscoveryV1().EndpointSlices("default").Create(t.Context(), slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// changes counts the source's change callbacks per resource.
type changes struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *changes) add(resource string, _ any, _ bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[resource]++
}

func (c *changes) get(resource string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[resource]
}

func testSnapshotMatchesFromAPI(t *testing.T, c *testcluster.Cluster) {
	ctx := t.Context()
	ch := &changes{n: map[string]int{}}
	s, err := newSource(c.Admin, "node1", sourceEvents{
		changed:    ch.add,
		watchError: func(r string, err error) { t.Errorf("watch %s: %v", r, err) },
	})
	if err != nil {
		t.Fatal(err)
	}
	informerCtx, cancel := context.WithCancel(ctx)
	defer s.shutdown()
	defer cancel()
	s.start(informerCtx)
	waitFor(t, "the caches to fill", s.hasSynced)
	snap, fp, err := s.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	want, err := fromapi.Snapshot(ctx, c.Admin, "node1")
	if err != nil {
		t.Fatal(err)
	}
	// The filters work on the server: what Build ignores never arrives.
	names := func(s *cluster.Snapshot) (out []string) {
		for _, svc := range s.Services {
			out = append(out, svc.Name)
		}
		for _, sl := range s.EndpointSlices {
			out = append(out, sl.Name)
		}
		return out
	}
	if got, all := strings.Join(names(snap), " "), strings.Join(names(want), " "); got != "kubernetes web other-proxy-1 web-1" ||
		all != "db kubernetes other-proxy web db-1 other-proxy-1 web-1" {
		t.Errorf("watch snapshot has %q, FromAPI's %q", got, all)
	}
	if len(snap.Nodes) != 1 || snap.Nodes[0].Kind != "Node" || snap.Services[0].APIVersion != "v1" || len(snap.ServiceCIDRs) != 1 {
		t.Errorf("snapshot nodes %d, kinds %q %q, servicecidrs %d", len(snap.Nodes), snap.Nodes[0].Kind, snap.Services[0].APIVersion, len(snap.ServiceCIDRs))
	}
	// The objects both hold are the same, normalised alike.
	if !reflect.DeepEqual(snap.Nodes, want.Nodes) || !reflect.DeepEqual(snap.ServiceCIDRs, want.ServiceCIDRs) {
		t.Errorf("nodes or servicecidrs differ:\n%+v\n%+v", snap.Nodes, want.Nodes)
	}
	for _, svc := range snap.Services {
		i := slices.IndexFunc(want.Services, func(w corev1.Service) bool { return w.Name == svc.Name })
		if i < 0 || !reflect.DeepEqual(svc, want.Services[i]) {
			t.Errorf("service %s differs from FromAPI's:\n%+v", svc.Name, svc)
		}
	}
	// Build sees the same cluster in both.
	cfg := cluster.Config{NodeName: "node1"}
	gotTables, gotWarnings, err1 := cluster.Build(snap, cfg)
	wantTables, wantWarnings, err2 := cluster.Build(want, cfg)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotTables, wantTables) || !reflect.DeepEqual(gotWarnings, wantWarnings) {
		t.Errorf("Build from the informers:\n%+v\n%v\nfrom FromAPI:\n%+v\n%v", gotTables.IPv4, gotWarnings, wantTables.IPv4, wantWarnings)
	}
	if len(gotTables.IPv4.Ports) != 2 { // kubernetes:https and web:http
		t.Errorf("%d IPv4 service ports, want 2", len(gotTables.IPv4.Ports))
	}

	// Events: a node heartbeat changes nothing that matters; a label does.
	before := ch.get(resNodes)
	node, _ := c.Admin.CoreV1().Nodes().Get(ctx, "node1", metav1.GetOptions{})
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}
	if node, err = c.Admin.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the heartbeat in the cache", func() bool { n := s.node(); return n != nil && len(n.Status.Conditions) > 0 })
	if _, fpBeat, _ := s.snapshot(); ch.get(resNodes) != before || fpBeat != fp {
		t.Errorf("heartbeat: %d node events, want %d; fingerprint changed: %v", ch.get(resNodes), before, fpBeat != fp)
	}
	createSlice(t, c.Admin, "web2", map[string]string{discoveryv1.LabelServiceName: "web"}, "10.244.0.13")
	waitFor(t, "the new slice's event", func() bool { return ch.get(resEndpointSlices) == 3 })
	if _, fp2, _ := s.snapshot(); fp2 == fp {
		t.Error("a new EndpointSlice left the fingerprint as it was")
	}
	node.Labels[corev1.LabelTopologyZone] = "z-moved"
	if _, err := c.Admin.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the zone change's event", func() bool { return ch.get(resNodes) == before+1 })
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// firstSync runs Run with kubeconfig for node until its first sync, and
// returns that sync's snapshot, or Run's error; nil and nil is neither in
// 20 s.
func firstSync(t *testing.T, kubeconfig, node string) (*cluster.Snapshot, error) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var first *cluster.Snapshot
	err := Run(ctx, Config{RESTConfig: restConfigFor(t, kubeconfig), NodeName: node, SyncPeriod: time.Minute,
		Health: healthcheck.New(healthcheck.Options{Timeout: time.Minute}),
		Sync: func(_ context.Context, snap *cluster.Snapshot) (Result, error) {
			if first == nil {
				first = snap
			}
			cancel()
			return Result{}, nil
		},
	})
	return first, err
}

// testStartup: what the informers' first errors and full caches say ends
// Run at once, with the resource named, or is tolerated with a warning,
// without a separate check before them.
func testStartup(t *testing.T, c *testcluster.Cluster) {
	ctx := t.Context()
	// No rights at all: a permanent error naming a resource.
	_, err := firstSync(t, c.OtherKubeconfig, "node1")
	var perm *PermanentError
	if !errors.As(err, &perm) || !strings.Contains(err.Error(), "list and watch ") || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("no rights: %v, want a permanent error about list and watch", err)
	}

	// Read rights on everything but ServiceCIDRs: tolerated, with a warning.
	c.Apply(t, `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: watch-no-cidrs}
rules:
- {apiGroups: [""], resources: [nodes, services], verbs: [get, list, watch]}
- {apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: other-watch-no-cidrs}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: watch-no-cidrs}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: other}
`)
	var snap *cluster.Snapshot
	waitFor(t, "the role binding to take effect", func() bool {
		snap, err = firstSync(t, c.OtherKubeconfig, "node1")
		return err == nil
	})
	if snap == nil || len(snap.Warnings) != 1 || snap.Warnings[0].Object != resServiceCIDRs ||
		!strings.Contains(snap.Warnings[0].Message, "forbidden") || len(snap.ServiceCIDRs) != 0 {
		t.Errorf("without servicecidrs rights: snapshot %v", snap)
	}

	// A Node that does not exist.
	_, err = firstSync(t, c.AdminKubeconfig, "no-such-node")
	if !errors.As(err, &perm) || !IsNodeNotFound(err) || !strings.Contains(err.Error(), `"no-such-node"`) {
		t.Errorf("missing node: %v", err)
	}

	// An API server that does not answer is waited for, not failed.
	down := *c
	down.Server = "https://127.0.0.1:1"
	var logs syncBuffer
	runCtx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	// The initial sync counts as a change from the start: with the
	// server down for longer than the timeout, the proxy is unhealthy.
	health := healthcheck.New(healthcheck.Options{Timeout: time.Second})
	err = Run(runCtx, Config{
		RESTConfig: restConfigFor(t, down.WriteKubeconfig(t, "down", "token")), NodeName: "node1", SyncPeriod: time.Second,
		Health: health,
		Sync: func(context.Context, *cluster.Snapshot) (s Result, err error) {
			return s, errors.New("never called")
		},
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	all := logs.String()
	if err != nil || !strings.Contains(all, "Cannot reach the API server") || !strings.Contains(all, "connection refused") || strings.Contains(all, "Watch failed") {
		t.Errorf("unreachable API server: Run returned %v after logging %q, want nil after waiting", err, all)
	}
	if health.Healthy() {
		t.Error("unreachable API server: healthy after 1.5 s without the initial sync, want unhealthy after the 1 s timeout")
	}
}

// syncBuffer is a bytes.Buffer that the log handler and the test may use
// at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func clientFor(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	return kubernetes.NewForConfigOrDie(restConfigFor(t, kubeconfig))
}

func restConfigFor(t *testing.T, kubeconfig string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
