package ipvs

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

// hostKernel is the Kernel for tests on a host without IPVS and without
// the dummy interface type: the ipsets and sysctls are real (netlink, in a
// lab namespace, so that the real iptables rules can match them), IPVS and
// kube-ipvs0 are an in-memory model with the kernel's error behaviour.
// Every call is logged, and failOn can make one fail.
type hostKernel struct {
	*NetlinkKernel
	mu       sync.Mutex
	services map[diff.IPVSServiceKey]*ipvs.VirtualServer
	conns    map[diff.IPVSDestKey]diff.IPVSConns
	device   bool
	addrs    map[netip.Addr]netip.Prefix
	log      []string
	failOn   func(call string) error
}

func newHostKernel(nl *NetlinkKernel) *hostKernel {
	return &hostKernel{NetlinkKernel: nl, services: map[diff.IPVSServiceKey]*ipvs.VirtualServer{},
		conns: map[diff.IPVSDestKey]diff.IPVSConns{}, addrs: map[netip.Addr]netip.Prefix{}}
}

// call logs a call and returns the injected failure, if any.
func (k *hostKernel) call(format string, args ...any) error {
	c := fmt.Sprintf(format, args...)
	k.mu.Lock()
	k.log = append(k.log, c)
	f := k.failOn
	k.mu.Unlock()
	if f != nil {
		return f(c)
	}
	return nil
}

func (k *hostKernel) calls() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.log)
}

func (k *hostKernel) Services(f nodetable.Family) ([]*ipvs.VirtualServer, map[diff.IPVSDestKey]diff.IPVSConns, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []*ipvs.VirtualServer
	for _, vs := range k.services {
		if vs.Address.Is6() == (f == nodetable.IPv6) {
			c := *vs
			c.RealServers = slices.Clone(vs.RealServers)
			sortReals(c.RealServers)
			out = append(out, &c)
		}
	}
	slices.SortFunc(out, func(a, b *ipvs.VirtualServer) int { return compareKeys(diff.IPVSKey(a), diff.IPVSKey(b)) })
	conns := map[diff.IPVSDestKey]diff.IPVSConns{}
	for key, c := range k.conns {
		conns[key] = c
	}
	return out, conns, nil
}

func (k *hostKernel) Dests(vs *ipvs.VirtualServer) ([]ipvs.RealServer, []diff.IPVSConns, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	live := k.services[diff.IPVSKey(vs)]
	if live == nil {
		return nil, nil, nil
	}
	var cs []diff.IPVSConns
	for _, r := range live.RealServers {
		cs = append(cs, k.conns[diff.IPVSDestKey{Service: diff.IPVSKey(vs), Dest: netip.AddrPortFrom(r.Address, r.Port)}])
	}
	return slices.Clone(live.RealServers), cs, nil
}

func (k *hostKernel) AddService(vs *ipvs.VirtualServer) error {
	if err := k.call("add-service %s", vs.Service()); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.services[diff.IPVSKey(vs)] != nil {
		return unix.EEXIST
	}
	c := *vs
	c.RealServers = nil
	k.services[diff.IPVSKey(vs)] = &c
	return nil
}

func (k *hostKernel) EditService(vs *ipvs.VirtualServer) error {
	if err := k.call("edit-service %s", vs.Service()); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	live := k.services[diff.IPVSKey(vs)]
	if live == nil {
		return unix.ESRCH
	}
	live.Scheduler, live.Flags, live.Timeout = vs.Scheduler, vs.Flags, vs.Timeout
	return nil
}

func (k *hostKernel) DeleteService(vs *ipvs.VirtualServer) error {
	if err := k.call("delete-service %s", vs.Service()); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.services, diff.IPVSKey(vs))
	return nil
}

func (k *hostKernel) dest(vs *ipvs.VirtualServer, r ipvs.RealServer, verb string, fn func(live *ipvs.VirtualServer, i int) error) error {
	if err := k.call("%s %s -r %s", verb, vs.Service(), netip.AddrPortFrom(r.Address, r.Port)); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	live := k.services[diff.IPVSKey(vs)]
	if live == nil {
		return unix.ESRCH
	}
	return fn(live, slices.IndexFunc(live.RealServers, func(x ipvs.RealServer) bool { return x.Address == r.Address && x.Port == r.Port }))
}

func (k *hostKernel) AddDest(vs *ipvs.VirtualServer, r ipvs.RealServer) error {
	return k.dest(vs, r, "add-dest", func(live *ipvs.VirtualServer, i int) error {
		if i >= 0 {
			return unix.EEXIST
		}
		live.RealServers = append(live.RealServers, r)
		return nil
	})
}

func (k *hostKernel) EditDest(vs *ipvs.VirtualServer, r ipvs.RealServer) error {
	return k.dest(vs, r, "edit-dest", func(live *ipvs.VirtualServer, i int) error {
		if i < 0 {
			return unix.ENOENT
		}
		live.RealServers[i] = r
		return nil
	})
}

func (k *hostKernel) DeleteDest(vs *ipvs.VirtualServer, r ipvs.RealServer) error {
	return k.dest(vs, r, "delete-dest", func(live *ipvs.VirtualServer, i int) error {
		if i >= 0 {
			live.RealServers = slices.Delete(live.RealServers, i, i+1)
		}
		return nil
	})
}

func (k *hostKernel) Device(f nodetable.Family) (bool, []netip.Prefix, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []netip.Prefix
	for a, p := range k.addrs {
		if a.Is6() == (f == nodetable.IPv6) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	return k.device, out, nil
}

func (k *hostKernel) CreateDevice() error {
	if err := k.call("create-device"); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.device = true
	return nil
}

func (k *hostKernel) DeleteDevice() error {
	if err := k.call("delete-device"); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.device, k.addrs = false, map[netip.Addr]netip.Prefix{}
	return nil
}

func (k *hostKernel) AddAddress(p netip.Prefix) error {
	if err := k.call("add-address %s", p); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.device {
		return unix.ENODEV
	}
	k.addrs[p.Addr()] = p
	return nil
}

func (k *hostKernel) DeleteAddress(p netip.Prefix) error {
	if err := k.call("delete-address %s", p); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.addrs, p.Addr())
	return nil
}

func (k *hostKernel) CreateSet(s *ipvs.Set) error {
	if err := k.call("create-set %s", s.Name); err != nil {
		return err
	}
	return k.NetlinkKernel.CreateSet(s)
}

func (k *hostKernel) DestroySet(name string) error {
	if err := k.call("destroy-set %s", name); err != nil {
		return err
	}
	return k.NetlinkKernel.DestroySet(name)
}

func (k *hostKernel) AddEntry(s *ipvs.Set, e string) error {
	if err := k.call("add-entry %s %s", s.Name, e); err != nil {
		return err
	}
	return k.NetlinkKernel.AddEntry(s, e)
}

func (k *hostKernel) DeleteEntry(s *ipvs.Set, e string) error {
	if err := k.call("delete-entry %s %s", s.Name, e); err != nil {
		return err
	}
	return k.NetlinkKernel.DeleteEntry(s, e)
}

// nsExec runs the iptables tools inside a lab namespace and logs each
// restore into the kernel's call log, so tests see where the helper
// chains were written relative to the other calls. failRestore makes
// restores fail.
type nsExec struct {
	ns          netlab.NS
	k           *hostKernel
	failRestore bool
}

func (e *nsExec) Run(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error) {
	if strings.Contains(name, "-restore") {
		if err := e.k.call("iptables-restore"); err != nil {
			return nil, err
		}
		if e.failRestore {
			return nil, fmt.Errorf("%s: injected failure", name)
		}
	}
	return e.ns.RunInput(ctx, stdin, name, args...)
}
