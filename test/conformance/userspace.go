package conformance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

// The userspace mode's chains, as v1.25 named them.
var userspaceChains = []string{
	"KUBE-NODEPORT-CONTAINER", "KUBE-NODEPORT-HOST", "KUBE-NODEPORT-NON-LOCAL",
	"KUBE-PORTALS-CONTAINER", "KUBE-PORTALS-HOST",
}

// UserspaceKubeProxyConfig is kube-proxy v1.25's configuration file
// (KubeProxyConfiguration v1alpha1 as v1.25 knew it) for the userspace mode:
// the scenario's node, the tool's default proxy port range (v1.25 took
// random ephemeral ports without one), and nothing else changed. v1.25's
// userspace mode honoured no masquerade, local-detection or NodePort
// address settings, so config.yaml's are left out.
func (s *Scenario) UserspaceKubeProxyConfig(kubeconfig string) ([]byte, error) {
	cfg := map[string]any{
		"apiVersion":         "kubeproxy.config.k8s.io/v1alpha1",
		"kind":               "KubeProxyConfiguration",
		"mode":               "userspace",
		"hostnameOverride":   s.Config.NodeName,
		"clientConnection":   map[string]any{"kubeconfig": kubeconfig},
		"metricsBindAddress": metricsAddr,
		"healthzBindAddress": healthzAddr,
		"oomScoreAdj":        0,
		"portRange":          render.DefaultProxyPortRange.String(),
		"featureGates":       map[string]bool{"KubeletInUserNamespace": true}, // see StartKubeProxyV125
		"conntrack": map[string]any{
			"maxPerCore": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s",
		},
	}
	return yaml.Marshal(cfg)
}

// EndpointsFromSlices are the v1 Endpoints that the endpoints controller
// would keep for snap's EndpointSlices: kube-proxy v1.25's userspace mode
// watched Endpoints, not EndpointSlices, and no controller runs here. Each
// slice becomes one subset, with the slice's ports that name a port of
// the Service (the controller derives Endpoints from the Service's ports);
// ready endpoints (ready unset or true) are addresses, the others
// not-ready addresses.
func EndpointsFromSlices(snap *cluster.Snapshot) []corev1.Endpoints {
	svcPorts := map[[2]string][]string{}
	for _, svc := range snap.Services {
		for _, p := range svc.Spec.Ports {
			key := [2]string{svc.Namespace, svc.Name}
			svcPorts[key] = append(svcPorts[key], p.Name)
		}
	}
	byService := map[[2]string]*corev1.Endpoints{}
	var order [][2]string
	for _, es := range snap.EndpointSlices {
		svc := es.Labels[discoveryv1.LabelServiceName]
		if svc == "" || (es.AddressType != discoveryv1.AddressTypeIPv4 && es.AddressType != discoveryv1.AddressTypeIPv6) {
			continue
		}
		key := [2]string{es.Namespace, svc}
		ep := byService[key]
		if ep == nil {
			ep = &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: es.Namespace, Name: svc}}
			byService[key] = ep
			order = append(order, key)
		}
		// An empty subset is invalid; the controller leaves it out.
		sub := subsetOf(es, svcPorts[key])
		if len(sub.Ports) > 0 && len(sub.Addresses)+len(sub.NotReadyAddresses) > 0 {
			ep.Subsets = append(ep.Subsets, sub)
		}
	}
	out := make([]corev1.Endpoints, 0, len(order))
	for _, k := range order {
		out = append(out, *byService[k])
	}
	return out
}

func subsetOf(es discoveryv1.EndpointSlice, names []string) corev1.EndpointSubset {
	var sub corev1.EndpointSubset
	for _, p := range es.Ports {
		ep := corev1.EndpointPort{Protocol: corev1.ProtocolTCP}
		if p.Name != nil {
			ep.Name = *p.Name
		}
		if !slices.Contains(names, ep.Name) {
			continue
		}
		if p.Port != nil {
			ep.Port = *p.Port
		}
		if p.Protocol != nil {
			ep.Protocol = *p.Protocol
		}
		sub.Ports = append(sub.Ports, ep)
	}
	for _, e := range es.Endpoints {
		for _, a := range e.Addresses {
			addr := corev1.EndpointAddress{IP: a, NodeName: e.NodeName}
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				sub.Addresses = append(sub.Addresses, addr)
			} else {
				sub.NotReadyAddresses = append(sub.NotReadyAddresses, addr)
			}
		}
	}
	return sub
}

// LoadEndpoints creates eps in the API server.
func (o Objects) LoadEndpoints(ctx context.Context, eps []corev1.Endpoints) error {
	for _, ep := range eps {
		if _, err := o.Client.CoreV1().Endpoints(ep.Namespace).Create(ctx, &ep, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create Endpoints %s/%s: %w", ep.Namespace, ep.Name, err)
		}
	}
	return nil
}

// ClearEndpoints deletes every Endpoints object but default/kubernetes,
// which the apiserver keeps itself.
func (o Objects) ClearEndpoints(ctx context.Context) error {
	list, err := o.Client.CoreV1().Endpoints(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, ep := range list.Items {
		if ep.Namespace == metav1.NamespaceDefault && ep.Name == "kubernetes" {
			continue
		}
		if err := ignoreNotFound(o.Client.CoreV1().Endpoints(ep.Namespace).Delete(ctx, ep.Name, metav1.DeleteOptions{})); err != nil {
			return err
		}
	}
	return nil
}

// UplinkDefaultRoute moves ns's IPv4 default route onto a new link without
// an address (a veth whose peer stays in ns: kernels without the dummy
// driver have veth, which netlab needs anyway). v1.25 bound its host-traffic DNAT to the address of
// the interface with the default route, and to a global address on the
// loopback when that interface has none, as on a node whose addresses sit
// on lo; the tool takes the node's primary IP. netlab's default route goes
// through the client link (203.0.113.1): with this, both take the node IP.
func UplinkDefaultRoute(ctx context.Context, ns netlab.NS) error {
	for _, args := range [][]string{
		{"link", "add", "uplink", "type", "veth", "peer", "name", "uplink-peer"},
		{"link", "set", "uplink-peer", "up"},
		{"link", "set", "uplink", "up"},
		{"-4", "route", "replace", "default", "dev", "uplink"},
	} {
		if out, err := ns.Run(ctx, "ip", args...); err != nil {
			return fmt.Errorf("ip %s in %s: %w %s", strings.Join(args, " "), ns.Name(), err, out)
		}
	}
	return nil
}

// DumpUserspace reads the IPv4 iptables rules in ns (v1.25's userspace
// mode was single-stack) and returns the userspace mode's part canonically
// (CanonicalUserspace).
func DumpUserspace(ctx context.Context, ns netlab.NS) (Canonical, error) {
	data, err := ns.Run(ctx, saveCommand(nodetable.IPv4))
	if err != nil {
		return nil, err
	}
	return CanonicalUserspace(data)
}

// v1.25's userspace proxier raised its open-file limit to 64000 and failed
// to start when it could not, unless it ran in a user namespace with the
// KubeletInUserNamespace feature gate on.
const v125FileLimit = 64000

// StartKubeProxyV125 starts kube-proxy v1.25 as StartKubeProxy does. Where
// the hard open-file limit is below 64000 and cannot be raised (a
// container without CAP_SYS_RESOURCE), it runs kube-proxy in a mount
// namespace where its /proc/<pid>/uid_map shows a user namespace, which,
// with the KubeletInUserNamespace gate that UserspaceKubeProxyConfig
// turns on, makes v1.25 log the failure and go on. That check is the only
// use of either in v1.25's kube-proxy.
func StartKubeProxyV125(ns netlab.NS, bin, config, dir string) (*KubeProxy, error) {
	if !needsFakeUserNS() {
		return StartKubeProxy(ns, bin, config, dir)
	}
	fake := filepath.Join(dir, "uid_map")
	if err := os.WriteFile(fake, []byte("0 100000 65536\n"), 0o644); err != nil {
		return nil, err
	}
	// sh execs kube-proxy, which keeps sh's PID and so the bind mount.
	script := `mount --bind "$0" /proc/$$/uid_map && exec "$@"`
	return startKubeProxy(ns, dir, "unshare", "--mount", "--propagation=private",
		"sh", "-c", script, fake, bin, "--config="+config)
}

// needsFakeUserNS reports whether this process cannot raise its open-file
// limit to v125FileLimit, as kube-proxy v1.25 would try.
func needsFakeUserNS() bool {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return true
	}
	if lim.Max >= v125FileLimit {
		return false
	}
	want := unix.Rlimit{Cur: lim.Cur, Max: v125FileLimit}
	if unix.Prlimit(0, unix.RLIMIT_NOFILE, &want, nil) != nil {
		return true
	}
	// Raised for this process (and its children): put it back.
	_ = unix.Prlimit(0, unix.RLIMIT_NOFILE, &lim, nil)
	return false
}
