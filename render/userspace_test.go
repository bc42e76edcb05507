package render_test

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/userspace"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

func natRules(rs *userspace.Ruleset, chain string) []ipt.Rule {
	return rs.IPTables.Table(ipt.NAT).Chain(chain).Rules
}

// With the proxy bound to one address, container traffic is DNATed to it
// instead of REDIRECTed, and host traffic goes there too (v1.25).
func TestUserspaceListenIPUsesDNAT(t *testing.T) {
	table := synthetic.Table(1, 1)
	listen := netip.MustParseAddr("192.168.77.99")
	rs := render.Userspace(table, render.DefaultConfig(), render.UserspaceOptions{ListenIP: listen})
	p := rs.Ports[0].ProxyPort
	want := "-j DNAT --to-destination 192.168.77.99:" + strconv.Itoa(int(p))
	for _, chain := range []string{userspace.ChainPortalsContainer, userspace.ChainPortalsHost, userspace.ChainNodePortContainer, userspace.ChainNodePortHost} {
		rules := natRules(rs, chain)
		if len(rules) != 1 || !strings.HasSuffix(string(rules[0]), want) {
			t.Errorf("%s: %q, want one rule ending in %q", chain, rules, want)
		}
	}
	if rs.ListenIP != listen {
		t.Errorf("ListenIP %s", rs.ListenIP)
	}
}

// A listen IP of the other family falls back to the unspecified address.
func TestUserspaceListenIPOtherFamily(t *testing.T) {
	rs := render.Userspace(synthetic.Table(1, 1), render.DefaultConfig(), render.UserspaceOptions{ListenIP: netip.MustParseAddr("fd00::1")})
	if rs.ListenIP != netip.IPv4Unspecified() || !strings.Contains(string(natRules(rs, userspace.ChainPortalsContainer)[0]), "-j REDIRECT --to-ports ") {
		t.Errorf("listen %s, rules %q", rs.ListenIP, natRules(rs, userspace.ChainPortalsContainer))
	}
}

// Proxy ports never land on a NodePort in use, even when the range covers
// the NodePort range; a full range leaves ports without rules.
func TestUserspaceAvoidsNodePortsAndExhaustion(t *testing.T) {
	table := synthetic.Table(100, 1) // every tenth Service has NodePort 30000+i
	opts := render.UserspaceOptions{PortRange: render.ProxyPortRange{First: 30000, Last: 30094}}
	rs := render.Userspace(table, render.DefaultConfig(), opts)
	unallocated := 0
	for _, p := range rs.Ports {
		if p.ProxyPort == 0 {
			unallocated++
			continue
		}
		if p.ProxyPort%10 == 0 && p.ProxyPort <= 30090 {
			t.Errorf("%s: proxy port %d is a NodePort", p.Name, p.ProxyPort)
		}
	}
	if want := 100 - (95 - 10); unallocated != want {
		t.Errorf("%d ports unallocated, want %d", unallocated, want)
	}
	rules := 0
	for _, c := range rs.IPTables.Table(ipt.NAT).Chains {
		if c.Name == userspace.ChainPortalsContainer {
			rules = len(c.Rules)
		}
	}
	if rules != 100-unallocated {
		t.Errorf("%d ClusterIP portals, want %d", rules, 100-unallocated)
	}
}

func TestUserspaceOptionsValidate(t *testing.T) {
	for _, o := range []render.UserspaceOptions{
		{ListenIP: netip.MustParseAddr("127.0.0.1")},
		{ListenIP: netip.MustParseAddr("::1")},
		{PortRange: render.ProxyPortRange{First: 10, Last: 5}},
	} {
		if err := o.Validate(); err == nil {
			t.Errorf("%+v: want an error", o)
		}
	}
	if err := (&render.UserspaceOptions{}).Validate(); err != nil {
		t.Error(err)
	}
}

// Adding a Service keeps every other Service's rules that sit at their
// home port, end to end through the renderer.
func TestUserspaceAddServiceKeepsPorts(t *testing.T) {
	table := synthetic.Table(500, 1)
	before := render.Userspace(table, render.DefaultConfig(), render.UserspaceOptions{})
	bigger := *table
	extra := table.Ports[0]
	extra.Name = nodetable.ServicePortName{Namespace: "zz", Name: "new", Port: "http", Protocol: nodetable.TCP}
	bigger.Ports = append(append([]nodetable.ServicePort(nil), table.Ports...), extra)
	after := render.Userspace(&bigger, render.DefaultConfig(), render.UserspaceOptions{})
	newHome := render.HomeProxyPort(extra.Name, render.DefaultProxyPortRange)
	for _, p := range before.Ports {
		q := after.Port(p.Name)
		home := p.ProxyPort == render.HomeProxyPort(p.Name, render.DefaultProxyPortRange)
		if home && q.ProxyPort != p.ProxyPort && newHome != p.ProxyPort {
			t.Errorf("%s moved from %d to %d", p.Name, p.ProxyPort, q.ProxyPort)
		}
	}
}
