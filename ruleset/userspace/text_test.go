package userspace

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

const sample = `## ports IPv4 listen 0.0.0.0
# service-port protocol portal proxy-port affinity-seconds endpoints
default/dns:dns udp 10.96.0.10:53 21234 0 10.244.0.2:53,10.244.1.2:53
default/web tcp 10.96.0.20:80 25870 10800 -
## iptables
*nat
:PREROUTING - [0:0]
:KUBE-PORTALS-CONTAINER - [0:0]
-A PREROUTING -m comment --comment "handle ClusterIPs; NOTE: this must be before the NodePort rules" -j KUBE-PORTALS-CONTAINER
-A KUBE-PORTALS-CONTAINER -d 10.96.0.20/32 -p tcp -m comment --comment "default/web" -m tcp --dport 80 -j REDIRECT --to-ports 25870
COMMIT
## ports IPv6 listen fd00::1
# service-port protocol portal proxy-port affinity-seconds endpoints
default/web tcp [fd00:96::20]:80 25870 0 [fd00:244::5]:8080
## iptables
`

func TestTextRoundTrip(t *testing.T) {
	sets, err := ParseAll([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 2 {
		t.Fatalf("%d rulesets, want 2", len(sets))
	}
	web := sets[0].Port(nodetable.ServicePortName{Namespace: "default", Name: "web", Protocol: nodetable.TCP})
	if web == nil || web.ProxyPort != 25870 || web.AffinityTimeoutSeconds != 10800 || len(web.Endpoints) != 0 {
		t.Errorf("default/web: %+v", web)
	}
	if got := sets[1].ListenIP; got != netip.MustParseAddr("fd00::1") {
		t.Errorf("IPv6 listen IP %s", got)
	}
	var b strings.Builder
	if err := EncodeAll(&b, sets); err != nil {
		t.Fatal(err)
	}
	if b.String() != sample {
		t.Errorf("Encode(Parse(text)) differs:\n%s", b.String())
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ text, msg string }{
		{"default/web tcp 10.96.0.1:80 1 0 -\n", "expected a ## ports line"},
		{"## ports IPv5 listen 0.0.0.0\n## iptables\n", "unknown family"},
		{"## ports IPv4 listen x\n## iptables\n", "listen address"},
		{"## ports IPv4 listen 0.0.0.0\n", "missing ## iptables"},
		{"## ports IPv4 listen 0.0.0.0\ndefault/web icmp 10.96.0.1:80 1 0 -\n## iptables\n", "protocol"},
		{"## ports IPv4 listen 0.0.0.0\ndefault tcp 10.96.0.1:80 1 0 -\n## iptables\n", "namespace/name"},
		{"## ports IPv4 listen 0.0.0.0\ndefault/web tcp 10.96.0.1:80 70000 0 -\n## iptables\n", "proxy port"},
		{"## ports IPv4 listen 0.0.0.0\ndefault/web tcp 10.96.0.1:80 1 0 x\n## iptables\n", "endpoint"},
		{"## ports IPv4 listen 0.0.0.0\n## iptables\n-A X -j Y\n", "line 3"},
	} {
		_, err := ParseAll([]byte(tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("ParseAll(%q) = %v, want an error with %q", tc.text, err, tc.msg)
		}
	}
}

// FuzzParseRoundTrip checks that whatever ParseAll accepts, EncodeAll
// writes back into text that parses to the same value and the same text.
func FuzzParseRoundTrip(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte("## ports IPv4 listen 0.0.0.0\n## iptables\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sets, err := ParseAll(data)
		if err != nil {
			return
		}
		var b strings.Builder
		if err := EncodeAll(&b, sets); err != nil {
			t.Fatal(err)
		}
		again, err := ParseAll([]byte(b.String()))
		if err != nil {
			t.Fatalf("re-parse of encoded text: %v\n%s", err, b.String())
		}
		if len(again) != len(sets) {
			t.Fatalf("%d rulesets, then %d", len(sets), len(again))
		}
		for i := range sets {
			if !sets[i].Equal(again[i]) {
				t.Fatalf("ruleset %d changed:\n%s\n%s", i, sets[i], again[i])
			}
		}
		var b2 strings.Builder
		_ = EncodeAll(&b2, again)
		if b2.String() != b.String() {
			t.Fatalf("encoding is not idempotent")
		}
	})
}
