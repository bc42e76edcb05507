package ipvs

import (
	"net/netip"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

const sample = `## ipvs IPv4
-A -t 10.96.0.1:443 -s mh -p 10800 -b mh-fallback,mh-port
-a -t 10.96.0.1:443 -r 10.244.0.5:8443 -m -w 1
-a -t 10.96.0.1:443 -r 10.244.0.6:8443 -m -w 0
-A --sctp-service 10.96.0.2:53 -s rr
-A -u [::ffff:10.0.0.1]:53 -s sh -b sh-port
## ipset
# Kubernetes service cluster ip + port for masquerade purpose
create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536
add KUBE-CLUSTER-IP 10.96.0.1,tcp:443
create KUBE-NODE-PORT-TCP bitmap:port range 0-65535
add KUBE-NODE-PORT-TCP 30000
## kube-ipvs0
addr add 10.96.0.1/32 dev kube-ipvs0
## iptables
*nat
:KUBE-SERVICES - [0:0]
-A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT
COMMIT
`

func TestParseEncodeRoundTrip(t *testing.T) {
	rs, err := Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	if got := rs.String(); got != sample {
		t.Errorf("Encode(Parse(sample)) differs:\n%s", got)
	}
	vs := rs.VirtualServer(TCP, netip.MustParseAddr("10.96.0.1"), 443)
	if vs == nil || vs.Flags != FlagPersistent|FlagSched1|FlagSched2 || vs.Timeout != 10800 || len(vs.RealServers) != 2 || vs.RealServers[1].Weight != 0 {
		t.Errorf("virtual server %+v", vs)
	}
	if s := rs.Set("KUBE-CLUSTER-IP"); s == nil || s.Comment == "" || s.Family != "inet" || len(s.Entries) != 1 {
		t.Errorf("set %+v", s)
	}
}

func TestEncodeParseValue(t *testing.T) {
	rs := &Ruleset{
		Family: nodetable.IPv6,
		VirtualServers: []*VirtualServer{{Protocol: TCP, Address: netip.MustParseAddr("fd00::1"), Port: 80, Scheduler: "rr",
			RealServers: []RealServer{{Address: netip.MustParseAddr("fd00:1::2"), Port: 8080, Method: Masquerade, Weight: 1}}}},
		Sets:      []*Set{{Name: "KUBE-6-IPVS-IPS", Type: HashIP, Family: "inet6", HashSize: 1024, MaxElem: 65536, Entries: []string{"fd00::1"}}},
		Addresses: []netip.Addr{netip.MustParseAddr("fd00::1")},
		IPTables:  &ipt.Ruleset{Family: nodetable.IPv6},
	}
	back, err := Parse([]byte(rs.String()))
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(rs) {
		t.Errorf("round trip:\n%s\n%s", rs, back)
	}
}

func TestParseErrorsNameTheLine(t *testing.T) {
	for name, text := range map[string]string{
		"no header":         "-A -t 1.2.3.4:80 -s rr\n",
		"bad family":        "## ipvs IPv5\n",
		"missing sections":  "## ipvs IPv4\n## ipset\n",
		"unknown vs":        "## ipvs IPv4\n-a -t 1.2.3.4:80 -r 1.2.3.5:80 -m -w 1\n",
		"duplicate vs":      "## ipvs IPv4\n-A -t 1.2.3.4:80 -s rr\n-A -t 1.2.3.4:80 -s rr\n",
		"bad flag":          "## ipvs IPv4\n-A -t 1.2.3.4:80 -s rr -b mh-port\n",
		"add before create": "## ipvs IPv4\n## ipset\nadd X 1\n",
		"dangling comment":  "## ipvs IPv4\n## ipset\n# c\n## kube-ipvs0\n",
		"not a host addr":   "## ipvs IPv4\n## ipset\n## kube-ipvs0\naddr add 10.0.0.0/8 dev kube-ipvs0\n",
		"bad iptables":      "## ipvs IPv4\n## ipset\n## kube-ipvs0\n## iptables\n*nat\n-A X -j Y\nCOMMIT\n",
	} {
		_, err := Parse([]byte(text))
		pe, ok := err.(*ParseError)
		if !ok || pe.Line == 0 {
			t.Errorf("%s: got %v, want a ParseError with a line number", name, err)
		}
	}
}

// FuzzParseRoundTrip checks that Parse never panics and that whatever it
// accepts, Encode writes back into text that parses to the same value.
func FuzzParseRoundTrip(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte("## ipvs IPv6\n-A -t [fd00::1]:80 -s rr\n## ipset\n## kube-ipvs0\n## iptables\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		all, err := ParseAll(data)
		if err != nil {
			return
		}
		for _, rs := range all {
			again, err := Parse([]byte(rs.String()))
			if err != nil {
				t.Fatalf("re-parse of encoded ruleset failed: %v\n%s", err, rs)
			}
			if !rs.Equal(again) {
				t.Fatalf("round trip changed the ruleset:\n%s\n%s", rs, again)
			}
		}
	})
}
