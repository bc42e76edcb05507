package conformance

import (
	"context"
	"fmt"
	"net/netip"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

// SyntheticNode is the node the synthetic cluster is rendered for, with the
// address netlab's node namespace has.
var SyntheticNode = &corev1.Node{
	ObjectMeta: metav1.ObjectMeta{Name: "node1", Labels: map[string]string{"kubernetes.io/hostname": "node1"}},
	Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: "192.168.77.10"},
	}},
}

// SyntheticEndpoints is the number of endpoints per Service of the
// synthetic cluster that the timing runs and benchmarks load.
const SyntheticEndpoints = 10

// SyntheticScenario is the node and proxy settings of the timing runs.
// Localhost NodePorts are off: with them kube-proxy adds a rule per
// NodePort that needs nfacct objects the tool's namespace lacks.
func SyntheticScenario(n int) *Scenario {
	s := &Scenario{Name: fmt.Sprintf("synthetic-%d", n)}
	s.Config.NodeName = SyntheticNode.Name
	s.Config.Config = render.DefaultConfig()
	s.Config.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}
	s.Config.LocalhostNodePorts = false
	return s
}

// LoadSynthetic writes test/synthetic's table of n Services with
// perService endpoints each into the API server as objects: one Service
// (every tenth a NodePort) and one EndpointSlice per Service, created by
// workers in parallel without client-side rate limits. The apiserver
// allocates the cluster IPs (the table's own start at the reserved
// 10.96.0.0).
func LoadSynthetic(ctx context.Context, kubeconfig string, n, perService, workers int) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 1e6, 1e6
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := (Objects{Client: client}).createNode(ctx, *SyntheticNode.DeepCopy()); err != nil {
		return err
	}
	table := synthetic.Table(n, perService)
	for i := range 50 {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns%d", i)}}
		if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return parallel(ctx, workers, len(table.Ports), func(i int) error {
		return createSynthetic(ctx, client, &table.Ports[i])
	})
}

// createSynthetic creates one synthetic Service port's Service and slice.
func createSynthetic(ctx context.Context, client kubernetes.Interface, sp *nodetable.ServicePort) error {
	name := sp.Name.Name
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: sp.Name.Namespace},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP,
			Ports: []corev1.ServicePort{{
				Name: sp.Name.Port, Protocol: corev1.ProtocolTCP, Port: sp.Port,
				TargetPort: intstr.FromInt32(sp.AllEndpoints[0].Port),
			}},
		},
	}
	if sp.NodePort != 0 {
		svc.Spec.Type = corev1.ServiceTypeNodePort
		svc.Spec.Ports[0].NodePort = sp.NodePort
	}
	if err := createRetrying(func() error {
		_, err := client.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("create Service %s/%s: %w", svc.Namespace, name, err)
	}
	port := sp.AllEndpoints[0].Port
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: name + "-1", Namespace: svc.Namespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: name},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &sp.Name.Port, Port: &port, Protocol: ptr(corev1.ProtocolTCP)}},
	}
	for _, ep := range sp.AllEndpoints {
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{ep.IP.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(ep.Ready), Serving: ptr(ep.Serving)},
			NodeName:   ptr(ep.NodeName),
		})
	}
	if _, err := client.DiscoveryV1().EndpointSlices(svc.Namespace).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create EndpointSlice %s/%s: %w", svc.Namespace, slice.Name, err)
	}
	return nil
}

// createRetrying calls create again when the API server timed out, up to
// five times in all; AlreadyExists then means an earlier call got through.
// kube-apiserver v1.37's ClusterIP allocator lists every IPAddress twice
// for each Service it creates (for its metrics), so past some 20k Services
// on a busy 2-core machine one create can take the whole 60 s it allows.
func createRetrying(create func() error) error {
	var err error
	for try := range 5 {
		err = create()
		switch {
		case err == nil:
			return nil
		case try > 0 && apierrors.IsAlreadyExists(err):
			return nil
		case !apierrors.IsTimeout(err) && !apierrors.IsServerTimeout(err):
			return err
		}
	}
	return err
}

func ptr[T any](v T) *T { return &v }

// parallel calls fn(0..n-1) from workers goroutines and returns the first
// error; after an error the remaining calls are skipped.
func parallel(ctx context.Context, workers, n int, fn func(int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		}()
	}
loop:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break loop
		}
	}
	close(next)
	wg.Wait()
	return first
}
