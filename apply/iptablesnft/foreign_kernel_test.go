package iptablesnft_test

import (
	"context"
	"errors"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptablesnft"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// foreignRule is one rule another tool or an operator might have put in
// the tables the tool reads, and whether Read prints it itself.
type foreignRule struct {
	family nodetable.Family
	table  string // "filter" or "nat"
	chain  string // a built-in chain of table, or a new chain
	rule   string
	reads  bool
}

var foreignRules = []foreignRule{
	{nodetable.IPv4, "filter", "FORWARD", "-i docker0 ! -o docker0 -j ACCEPT", true},
	{nodetable.IPv4, "filter", "FORWARD", "! -i veth+ -o br-+ -j DROP", true},
	{nodetable.IPv4, "filter", "INPUT", "-s 10.1.2.0/23 -d 192.168.0.0/20 -j DROP", true},
	{nodetable.IPv4, "filter", "INPUT", "-s 10.0.0.0/8 -p udp -m udp --sport 53 -j ACCEPT", true},
	{nodetable.IPv4, "filter", "INPUT", "-p tcp -m tcp ! --dport 22 -j RETURN", true},
	{nodetable.IPv4, "filter", "OUTPUT", "-m mark --mark 0x1 -j ACCEPT", true},
	{nodetable.IPv4, "filter", "OUTPUT", "-m mark ! --mark 0x10/0xf0 -j ACCEPT", true},
	{nodetable.IPv4, "filter", "INPUT", "-m conntrack --ctstate INVALID,UNTRACKED,SNAT -j DROP", true},
	{nodetable.IPv4, "filter", "INPUT", "-m state ! --state NEW -j ACCEPT", true},
	{nodetable.IPv4, "filter", "INPUT", "-m addrtype ! --src-type LOCAL,BROADCAST --dst-type UNICAST --limit-iface-in -j ACCEPT", true},
	{nodetable.IPv4, "filter", "INPUT", `-m comment --comment "it's \"quoted\" \\ here" -j ACCEPT`, true},
	{nodetable.IPv4, "filter", "INPUT", "-m comment --comment plain_word-1 -j ACCEPT", true},
	{nodetable.IPv4, "filter", "INPUT", "-m statistic --mode random ! --probability 0.25 -j DROP", true},
	{nodetable.IPv4, "filter", "INPUT", "-p tcp -m recent --update --seconds 60 --hitcount 3 --rttl --name SSH --mask 255.255.0.0 --rdest -j DROP", true},
	{nodetable.IPv4, "filter", "INPUT", "-p sctp -m sctp ! --sport 100:200 -j ACCEPT", true},
	{nodetable.IPv4, "filter", "FOREIGN", "-g FOREIGN2", true},
	{nodetable.IPv4, "filter", "FORWARD", "-m physdev --physdev-is-out ! --physdev-is-bridged -j DROP", true},
	{nodetable.IPv4, "filter", "INPUT", "-m recent ! --remove --name X_1 --rsource -j DROP", true},
	{nodetable.IPv4, "filter", "INPUT", "-m addrtype --dst-type BLACKHOLE,UNREACHABLE,PROHIBIT,XRESOLVE -j DROP", true},
	{nodetable.IPv4, "filter", "INPUT", "-m conntrack ! --ctstate INVALID -m conntrack --ctstate NEW,RELATED -j ACCEPT", true},
	{nodetable.IPv4, "filter", "FORWARD", "-i abcdefghijklmno -o x -j ACCEPT", true},
	{nodetable.IPv4, "nat", "POSTROUTING", "-o eth0 -p tcp -j MASQUERADE --to-ports 1000-2000 --random", true},
	{nodetable.IPv4, "nat", "PREROUTING", "-p tcp -m tcp --dport 8080 -j REDIRECT --to-ports 80", true},
	{nodetable.IPv4, "nat", "PREROUTING", "-d 10.0.0.1/32 -j DNAT --to-destination 10.0.0.2", true},
	{nodetable.IPv6, "filter", "INPUT", "-s fd00::/64 ! -d ::ffff:10.0.0.1/128 -j ACCEPT", true},
	{nodetable.IPv6, "filter", "INPUT", "-p tcp -j REJECT --reject-with icmp6-port-unreachable", true},
	{nodetable.IPv6, "nat", "PREROUTING", "-d fd00::1/128 -p tcp -m tcp --dport 80 -j DNAT --to-destination [fd00::2]:8080", true},
	{nodetable.IPv6, "nat", "POSTROUTING", "-j MASQUERADE --random-fully", true},
	{nodetable.IPv6, "nat", "POSTROUTING", "-p udp -j MASQUERADE --to-ports 5000", true},
	{nodetable.IPv6, "nat", "PREROUTING", "-p tcp -j REDIRECT --to-ports 80-90 --random", true},
	{nodetable.IPv6, "nat", "PREROUTING", "-d fd00::1/128 -j DNAT --to-destination fd00::3", true},
	{nodetable.IPv6, "filter", "FORWARD", "-s 2001:db8:0:1::/63 -p sctp -m sctp --dport 9 -m mark --mark 0x2/0x3 -j RETURN", true},

	// Left to iptables-nft-save.
	{nodetable.IPv4, "filter", "INPUT", "-p tcp -m multiport --dports 22,80 -j ACCEPT", false},
	{nodetable.IPv4, "filter", "INPUT", "-p tcp -m tcp --dport 1000:2000 -j ACCEPT", false},
	{nodetable.IPv4, "filter", "INPUT", "-p tcp -m tcp --syn -j ACCEPT", false},
	{nodetable.IPv4, "filter", "INPUT", "-p icmp -j ACCEPT", false},
	{nodetable.IPv4, "filter", "INPUT", "-m limit --limit 5/sec -j LOG --log-prefix x", false},
	{nodetable.IPv4, "filter", "INPUT", "-p tcp -j REJECT --reject-with tcp-reset", false},
	{nodetable.IPv4, "filter", "INPUT", "-m conntrack --ctorigdstport 80 -j ACCEPT", false},
	{nodetable.IPv4, "filter", "INPUT", "-m statistic --mode nth --every 2 --packet 0 -j ACCEPT", false},
	{nodetable.IPv4, "filter", "INPUT", "-m physdev --physdev-in eth0 -j ACCEPT", false},
	{nodetable.IPv4, "nat", "PREROUTING", "-d 10.0.0.1/32 -j DNAT --to-destination 10.0.0.2-10.0.0.3", false},
	{nodetable.IPv4, "nat", "PREROUTING", "-s 10.0.0.0/255.0.255.0 -j RETURN", false},
	{nodetable.IPv6, "filter", "INPUT", "-d ::10.0.0.1/128 -j ACCEPT", false},
	{nodetable.IPv4, "filter", "FORWARD", "! -o + -j DROP", false},
	{nodetable.IPv4, "filter", "INPUT", "-m recent --rcheck --seconds 3000000000 --name X --rsource -j DROP", false},
	{nodetable.IPv6, "filter", "INPUT", "-m recent --set --name X --mask ::ffff:ffff --rsource -j DROP", false},
}

// TestForeignRules loads rules the tool never writes, one at a time: Read
// prints each exactly as iptables-nft-save does, or refuses it with
// ErrUnknown, never anything else.
func TestForeignRules(t *testing.T) {
	n := newNode(t)
	for _, fr := range foreignRules {
		t.Run(string(fr.family)+" "+fr.rule, func(t *testing.T) {
			n.load(t, fr.family, "*filter\nCOMMIT\n*nat\nCOMMIT\n")
			text := "*" + fr.table + "\n"
			if fr.chain == "FOREIGN" {
				text += ":FOREIGN - [0:0]\n:FOREIGN2 - [0:0]\n"
			}
			n.load(t, fr.family, text+"-A "+fr.chain+" "+fr.rule+"\nCOMMIT\n")
			got, err := n.read(fr.family)
			switch {
			case !fr.reads && errors.Is(err, iptablesnft.ErrUnknown):
			case !fr.reads:
				t.Fatalf("read %q (%v), want ErrUnknown", got, err)
			case err != nil:
				t.Fatal(err)
			}
			if want := n.save(t, fr.family); fr.reads && got != want {
				t.Errorf("read differs from iptables-nft-save:\n got: %s\nwant: %s", got, want)
			}
		})
	}
}

// TestNativeRulesAreUnknown: a rule that nft itself added to an
// iptables-nft table is not iptables' to print.
func TestNativeRulesAreUnknown(t *testing.T) {
	n := newNode(t)
	n.load(t, nodetable.IPv4, "*filter\n-A INPUT -s 10.0.0.1/32 -j ACCEPT\nCOMMIT\n")
	n.nft(t, "add rule ip filter INPUT ip saddr 10.0.0.2 log")
	if got, err := n.read(nodetable.IPv4); !errors.Is(err, iptablesnft.ErrUnknown) {
		t.Fatalf("read %q (%v), want ErrUnknown", got, err)
	}
	n.nft(t, "flush chain ip filter INPUT")
	// A test of no address bits, which iptables-nft-save leaves out.
	n.nft(t, "add rule ip filter INPUT ip saddr 0.0.0.0/0 accept")
	if got, err := n.read(nodetable.IPv4); !errors.Is(err, iptablesnft.ErrUnknown) {
		t.Fatalf("read %q (%v) with a /0 test, want ErrUnknown", got, err)
	}
	n.nft(t, "flush chain ip filter INPUT")
	if _, err := n.read(nodetable.IPv4); err != nil {
		t.Fatalf("read after the foreign rule went: %v", err)
	}
	// A comment nft keeps in the rule's userdata, which iptables-nft-save
	// prints as a comment match.
	n.nft(t, `add rule ip filter INPUT counter comment "kept in userdata"`)
	if got, err := n.read(nodetable.IPv4); !errors.Is(err, iptablesnft.ErrUnknown) {
		t.Fatalf("read %q (%v) with a rule's userdata, want ErrUnknown", got, err)
	}
	n.nft(t, "flush chain ip filter INPUT")
	n.nft(t, "add chain ip filter other { type filter hook input priority 10; }")
	if got, err := n.read(nodetable.IPv4); !errors.Is(err, iptablesnft.ErrUnknown) {
		t.Fatalf("read %q (%v) with a foreign base chain, want ErrUnknown", got, err)
	}
}

// nft runs one nft command in the node namespace.
func (n *node) nft(t *testing.T, command string) {
	t.Helper()
	if out, err := n.ns.Run(context.Background(), "nft", command); err != nil {
		t.Fatalf("nft %s: %v: %s", command, err, out)
	}
}
