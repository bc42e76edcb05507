// Package netlab builds throw-away network namespaces for kernel tests of
// the service proxy. Tests load iptables or nftables rules into the node
// namespace and then send real packets between the namespaces to see where
// they land.
//
// The topology is fixed except for the pods (addresses follow the
// kube-proxy test conventions):
//
//	client   203.0.113.2/24  eth0 ══ ext-client   203.0.113.1/24 ┐
//	client2  198.51.100.2/24 eth0 ══ ext-client2  198.51.100.1/24 ┤ node
//	pod a    10.244.0.5/32   eth0 ══ pod0         (no address)    ┤ lo: 192.168.77.10/32
//	pod b    10.244.1.7/32   eth0 ══ pod1         (no address)    ┘
//
// The node forwards (ip_forward=1, route_localnet=1, rp_filter=0,
// send_redirects=0) and has a /32 route to every pod through that pod's
// veth. The node IP sits on the node's loopback, so it is a LOCAL address
// for "addrtype" and "fib daddr type local" matches, and MASQUERADE picks it
// as the source toward pods, whose veths have no IPv4 address. Clients route
// everything through the node. Pods use the node IP as an on-link default
// gateway, so they route everything, including cluster IPs, through the node.
//
// The node's default route points at client. Locally generated packets to a
// cluster IP then find a route before OUTPUT DNAT, as on a real node; client
// does not forward, so packets that no rule claims are dropped silently.
//
// With WithIPv6 the same shape is built for IPv6: node fd00:77::10/128 on lo,
// clients fd00:203::2/64 and fd00:198::2/64, and pods reach the node through
// fe80::1 on their veth. Pods may then have one IPv4 and one IPv6 address.
//
// Every namespace is named "svcp-<pid>-<random>-<role>". The lab deletes
// them in t.Cleanup; `hack/netlab.sh clean` removes those left behind by a
// test process that was killed.
package netlab

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// Fixed names. Interface names must stay within IFNAMSIZ-1 = 15 bytes.
const (
	// NamePrefix starts the name of every namespace a lab creates.
	NamePrefix = "svcp-"
	// ClientIface is the node's veth toward client.
	ClientIface = "ext-client"
	// Client2Iface is the node's veth toward client2.
	Client2Iface = "ext-client2"
	// PodIfacePrefix starts the node's veth toward every pod ("pod0",
	// "pod1", ...), for --detect-local-mode=InterfaceNamePrefix.
	PodIfacePrefix = "pod"
	// PeerIface is the veth inside a client or pod namespace.
	PeerIface = "eth0"
	// DefaultTimeout bounds each probe that Spread sends.
	DefaultTimeout = 2 * time.Second
)

// Fixed addresses. They are variables only because netip has no constants;
// do not modify them.
var (
	// NodeIP is the node's primary IPv4 address (on the node's loopback).
	NodeIP = netip.MustParseAddr("192.168.77.10")
	// NodeIPv6 is the node's primary IPv6 address (WithIPv6 only).
	NodeIPv6 = netip.MustParseAddr("fd00:77::10")

	// ClientIP is the external client; ClientGatewayIP is the node's
	// address on ClientIface.
	ClientIP        = netip.MustParseAddr("203.0.113.2")
	ClientGatewayIP = netip.MustParseAddr("203.0.113.1")
	// Client2IP is a second external client, for loadBalancerSourceRanges.
	Client2IP        = netip.MustParseAddr("198.51.100.2")
	Client2GatewayIP = netip.MustParseAddr("198.51.100.1")

	ClientIPv6         = netip.MustParseAddr("fd00:203::2")
	ClientGatewayIPv6  = netip.MustParseAddr("fd00:203::1")
	Client2IPv6        = netip.MustParseAddr("fd00:198::2")
	Client2GatewayIPv6 = netip.MustParseAddr("fd00:198::1")

	// ClusterCIDR and ClusterCIDRv6 hold the pod addresses of the
	// conventions (10.244.0.0/24 on this node, 10.244.1.0/24 "remote");
	// AddPod does not enforce them.
	ClusterCIDR   = netip.MustParsePrefix("10.244.0.0/16")
	ClusterCIDRv6 = netip.MustParsePrefix("fd00:244::/64")

	// podGatewayIPv6 is on the node side of every IPv6 pod's veth.
	podGatewayIPv6 = netip.MustParseAddr("fe80::1")
)

// podNameRE is a DNS label; it also keeps names safe in replies and in
// namespace names.
var podNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// Option changes how New builds a lab.
type Option func(*config)

type config struct {
	ipv6 bool
}

// WithIPv6 also configures the IPv6 addresses and routes. The test is
// skipped (failed under CI) if the kernel has no IPv6.
func WithIPv6() Option { return func(c *config) { c.ipv6 = true } }

// Lab is one topology of namespaces. It is safe for concurrent use.
type Lab struct {
	t      testing.TB
	cfg    config
	prefix string // "svcp-<pid>-<random>-"

	node, client, client2 NS
	nodeNL                *netlink.Handle // rtnetlink socket in node

	mu      sync.Mutex
	closed  bool
	nss     []NS // every namespace created, in order
	pods    map[string]*Pod
	podIPs  map[netip.Addr]string
	closers []io.Closer    // listeners
	serving sync.WaitGroup // their goroutines
}

// New builds the fixed topology and registers its teardown with t.Cleanup.
// It skips the test when it cannot create namespaces (not root, no `ip`),
// or fails it under CI (test/testenv).
// Call it, and AddPod, from the test's own goroutine.
func New(t testing.TB, opts ...Option) *Lab {
	t.Helper()
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if reason := unavailable(cfg); reason != "" {
		testenv.SkipOrFail(t, "netlab: "+reason)
	}
	l := &Lab{
		t:      t,
		cfg:    cfg,
		prefix: fmt.Sprintf("%s%d-%08x-", NamePrefix, os.Getpid(), rand.Uint32()),
		pods:   map[string]*Pod{},
		podIPs: map[netip.Addr]string{},
	}
	t.Cleanup(l.close)
	if err := l.setup(); err != nil {
		if errors.Is(err, unix.EPERM) {
			testenv.SkipOrFail(t, fmt.Sprintf("netlab: cannot create network namespaces: %v", err))
		}
		t.Fatalf("netlab: %v", err)
	}
	return l
}

// unavailable says why the lab cannot run here, or "" if it can.
func unavailable(cfg config) string {
	if os.Geteuid() != 0 {
		return "needs root to create network namespaces (run the test as root)"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return "needs the ip command (iproute2) for `ip netns exec`"
	}
	if cfg.ipv6 {
		if _, err := os.Stat("/proc/sys/net/ipv6"); err != nil {
			return "WithIPv6: the kernel has no IPv6"
		}
	}
	return ""
}

// Node is the namespace that holds the proxy's rules.
func (l *Lab) Node() NS { return l.node }

// Client is the external client (ClientIP).
func (l *Lab) Client() NS { return l.client }

// Client2 is the second external client (Client2IP).
func (l *Lab) Client2() NS { return l.client2 }

// setup builds node, client and client2.
func (l *Lab) setup() error {
	var err error
	if l.node, err = l.newNS("node"); err != nil {
		return err
	}
	if l.nodeNL, err = netlink.NewHandleAt(l.node.s.h, unix.NETLINK_ROUTE); err != nil {
		return fmt.Errorf("netlink in %s: %w", l.node.Name(), err)
	}
	if err := l.setupNode(); err != nil {
		return err
	}
	clients := []struct {
		ns   *NS
		role string
		veth veth
	}{
		{&l.client, "client", l.clientVeth(ClientIface, clientIfindex,
			ClientGatewayIP, ClientIP, ClientGatewayIPv6, ClientIPv6)},
		{&l.client2, "client2", l.clientVeth(Client2Iface, client2Ifindex,
			Client2GatewayIP, Client2IP, Client2GatewayIPv6, Client2IPv6)},
	}
	for _, c := range clients {
		if *c.ns, err = l.newNS(c.role); err != nil {
			return err
		}
		if err := l.attach(*c.ns, c.veth); err != nil {
			return err
		}
	}
	return l.nodeDefaultRoutes()
}

// clientVeth describes the link between the node and an external client on
// a /24 (and a /64), with the node as the client's default gateway.
func (l *Lab) clientVeth(iface string, index int, gw, ip, gw6, ip6 netip.Addr) veth {
	v := veth{
		nodeIface: iface,
		nodeIndex: index,
		nodeAddrs: []netip.Prefix{netip.PrefixFrom(gw, 24)},
		peerAddrs: []netip.Prefix{netip.PrefixFrom(ip, 24)},
		gateways:  []netip.Addr{gw},
	}
	if l.cfg.ipv6 {
		v.nodeAddrs = append(v.nodeAddrs, netip.PrefixFrom(gw6, 64))
		v.peerAddrs = append(v.peerAddrs, netip.PrefixFrom(ip6, 64))
		v.gateways = append(v.gateways, gw6)
	}
	return v
}

// Pod is a namespace with one veth to the node and its own addresses.
type Pod struct {
	name  string
	ips   []netip.Addr
	index int // numbers the pod's interface
	iface string
	ns    NS
}

// Name is the pod's name, which its backends answer with.
func (p *Pod) Name() string { return p.name }

// IP is the pod's first address.
func (p *Pod) IP() netip.Addr { return p.ips[0] }

// IPs are all the pod's addresses (one per family).
func (p *Pod) IPs() []netip.Addr { return slices.Clone(p.ips) }

// NS is the pod's namespace.
func (p *Pod) NS() NS { return p.ns }

// Iface is the node's veth toward the pod (PodIfacePrefix + index).
func (p *Pod) Iface() string { return p.iface }

// AddPod creates a pod namespace with the given addresses (at least one, at
// most one per family; IPv6 needs WithIPv6) and routes it from the node. A
// failure fails the test.
func (l *Lab) AddPod(name string, ips ...netip.Addr) *Pod {
	l.t.Helper()
	p, err := l.addPod(name, ips)
	if err != nil {
		l.t.Fatalf("netlab: add pod %q: %v", name, err)
	}
	return p
}

func (l *Lab) addPod(name string, ips []netip.Addr) (*Pod, error) {
	if !podNameRE.MatchString(name) {
		return nil, errors.New("name must be a DNS label")
	}
	if err := l.checkPodIPs(ips); err != nil {
		return nil, err
	}
	l.mu.Lock()
	if _, ok := l.pods[name]; ok {
		l.mu.Unlock()
		return nil, errors.New("a pod with this name exists")
	}
	for _, ip := range ips {
		if other, ok := l.podIPs[ip]; ok {
			l.mu.Unlock()
			return nil, fmt.Errorf("address %s belongs to pod %q", ip, other)
		}
	}
	p := &Pod{name: name, ips: slices.Clone(ips), index: len(l.pods)}
	p.iface = fmt.Sprintf("%s%d", PodIfacePrefix, p.index)
	l.pods[name] = p // reserves the name and the interface index
	for _, ip := range ips {
		l.podIPs[ip] = name
	}
	l.mu.Unlock()

	var err error
	if p.ns, err = l.newNS("pod-" + name); err != nil {
		return nil, err
	}
	return p, l.attach(p.ns, l.podVeth(p))
}

func (l *Lab) checkPodIPs(ips []netip.Addr) error {
	if len(ips) == 0 {
		return errors.New("needs an address")
	}
	var v4, v6 int
	for _, ip := range ips {
		switch {
		case !ip.IsValid() || ip.IsUnspecified() || ip.Zone() != "" || ip.Is4In6():
			return fmt.Errorf("invalid address %q", ip)
		case ip.Is4():
			v4++
		case !l.cfg.ipv6:
			return fmt.Errorf("IPv6 address %s needs netlab.WithIPv6()", ip)
		default:
			v6++
		}
	}
	if v4 > 1 || v6 > 1 {
		return errors.New("at most one address per family")
	}
	return nil
}

// podVeth describes a pod's link: the pod's /32 (/128), an on-link default
// route via the node IP (fe80::1), and a host route on the node.
func (l *Lab) podVeth(p *Pod) veth {
	v := veth{nodeIface: p.iface, nodeIndex: podIfindexBase + p.index}
	for _, ip := range p.ips {
		host := netip.PrefixFrom(ip, ip.BitLen())
		v.peerAddrs = append(v.peerAddrs, host)
		v.routes = append(v.routes, host)
		if ip.Is4() {
			v.gateways = append(v.gateways, NodeIP)
			continue
		}
		v.nodeAddrs = append(v.nodeAddrs, netip.PrefixFrom(podGatewayIPv6, 64))
		v.gateways = append(v.gateways, podGatewayIPv6)
	}
	return v
}

// track keeps a listener until cleanup and runs its serve loop.
func (l *Lab) track(c io.Closer, serve func()) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		c.Close()
		return errors.New("lab is closed")
	}
	l.closers = append(l.closers, c)
	l.serving.Add(1)
	go func() {
		defer l.serving.Done()
		serve()
	}()
	return nil
}

// close tears everything down: listeners first (their sockets keep a
// namespace alive), then the handles, then the named namespaces.
func (l *Lab) close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	closers, nss := l.closers, l.nss
	l.mu.Unlock()

	for _, c := range closers {
		c.Close()
	}
	l.serving.Wait()
	if l.nodeNL != nil {
		l.nodeNL.Close()
	}
	for _, ns := range slices.Backward(nss) {
		ns.s.close()
		if err := netns.DeleteNamed(ns.Name()); err != nil {
			l.t.Errorf("netlab: delete namespace %s: %v", ns.Name(), err)
		}
	}
}
