package render

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// TestNFTAnonymousAddrSet checks the spelling against what nft 1.0.6 listed
// for the same anonymous sets.
func TestNFTAnonymousAddrSet(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string
	}{
		{"10.96.0.0/16", "10.96.0.0/16"},
		{"10.0.0.1/8", "10.0.0.0/8"},
		{"1.2.3.4/32", "1.2.3.4"},
		{"10.96.0.0/16 10.97.0.0/16", "{ 10.96.0.0/15 }"},
		{"10.96.0.0/16 10.96.1.0/24", "{ 10.96.0.0/16 }"},
		{"10.0.0.0/24 10.0.1.0/24 10.0.2.0/24", "{ 10.0.0.0-10.0.2.255 }"},
		{"10.0.0.0/24 10.0.0.5/32", "{ 10.0.0.0/24 }"},
		{"192.168.0.0/24 10.0.0.0/8 1.2.3.4/32 10.1.0.0/16 192.168.1.0/24", "{ 1.2.3.4, 10.0.0.0/8, 192.168.0.0/23 }"},
		{"fd00::/64 2001:db8::/32 fd00:0:0:1::/64", "{ 2001:db8::/32, fd00::/63 }"},
		{"0.0.0.0/0 1.2.3.4/32", "{ 0.0.0.0/0 }"},
	} {
		var ps []netip.Prefix
		for _, f := range strings.Fields(c.in) {
			ps = append(ps, netip.MustParsePrefix(f))
		}
		if got := nftAnonymousAddrSet(ps); got != c.want {
			t.Errorf("%s: got %q, want %q", c.in, got, c.want)
		}
	}
}

func TestNFTNames(t *testing.T) {
	n := nodetable.ServicePortName{Namespace: "ns1", Name: "svc1", Port: "http", Protocol: nodetable.TCP}
	if got := nftChainsFor(n).cluster; got != "service-VTO5ESCN-ns1/svc1/tcp/http" {
		t.Errorf("service chain = %s", got)
	}
	ep := nodetable.Endpoint{IP: netip.MustParseAddr("10.244.0.9"), Port: 8080}
	aff := nodetable.ServicePortName{Namespace: "ns1", Name: "svc-aff", Port: "http", Protocol: nodetable.TCP}
	if got := nftEndpointBase(aff, ep); got != "74APBPXK-ns1/svc-aff/tcp/http__10.244.0.9/8080" {
		t.Errorf("endpoint base = %s", got)
	}
	long := nodetable.ServicePortName{Namespace: strings.Repeat("n", 63), Name: strings.Repeat("s", 63), Port: strings.Repeat("p", 63), Protocol: nodetable.SCTP}
	v6 := nodetable.Endpoint{IP: netip.MustParseAddr("fd00:1111:2222:3333:4444:5555:6666:7777"), Port: 65535}
	got := nftEndpointBase(long, v6)
	if len(got) != nftNameBaseMax || !strings.HasSuffix(got, "...") {
		t.Errorf("long endpoint base has %d characters: %s", len(got), got)
	}
	if !strings.Contains(got, "fd00.1111.") {
		t.Errorf("IPv6 colons not replaced: %s", got)
	}
}
