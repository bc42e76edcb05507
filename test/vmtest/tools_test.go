package vmtest

import (
	"context"
	"os"
	"strings"
	"testing"
)

// kubeProxyStyleRules uses the matches and targets of kube-proxy's ipvs
// mode: ipset, comment, addrtype, mark and MASQUERADE.
const kubeProxyStyleRules = `*nat
:KUBE-SERVICES - [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-POSTROUTING - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A POSTROUTING -j KUBE-POSTROUTING
-A KUBE-SERVICES -m comment --comment "Kubernetes service cluster ip + port for masquerade purpose" -m set --match-set KUBE-CLUSTER-IP dst,dst ! -s 10.244.0.0/16 -j KUBE-MARK-MASQ
-A KUBE-SERVICES -m addrtype --dst-type LOCAL -m conntrack --ctstate NEW -j RETURN
-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000
-A KUBE-POSTROUTING -j MASQUERADE --random-fully
COMMIT
`

// nftScript uses a concatenated set and numgen, as kube-proxy's nftables
// mode does.
const nftScript = `table ip t {
	set s {
		type ipv4_addr . inet_service
	}
	chain c {
		type nat hook prerouting priority dstnat; policy accept;
		ip daddr . tcp dport @s dnat to numgen random mod 2 map { 0 : 10.244.0.5, 1 : 10.244.1.7 }
	}
}
`

// TestGuestTools runs the packed tools in a lab's node namespace: ipset,
// both iptables back ends with kube-proxy's matches, nft, conntrack, and a
// match module that is not preloaded (loaded on demand through modprobe).
func TestGuestTools(t *testing.T) {
	RequireGuest(t)
	ctx := context.Background()
	node := netlabNode(t)
	run := func(stdin string, args ...string) string {
		t.Helper()
		var in []byte
		if stdin != "" {
			in = []byte(stdin)
		}
		out, err := node.RunInput(ctx, in, args[0], args[1:]...)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	run("", "ipset", "create", "KUBE-CLUSTER-IP", "hash:ip,port")
	run("", "ipset", "add", "KUBE-CLUSTER-IP", "10.96.0.10,tcp:80")
	if out := run("", "ipset", "list", "KUBE-CLUSTER-IP"); !strings.Contains(out, "10.96.0.10,tcp:80") {
		t.Errorf("ipset list lacks the entry:\n%s", out)
	}
	for _, backend := range []string{"legacy", "nft"} {
		run(kubeProxyStyleRules, "iptables-"+backend+"-restore", "--noflush")
		if out := run("", "iptables-"+backend+"-save", "-t", "nat"); !strings.Contains(out, "--match-set KUBE-CLUSTER-IP dst,dst") {
			t.Errorf("iptables-%s-save lacks the set match:\n%s", backend, out)
		}
	}
	run(nftScript, "nft", "-f", "-")
	if out := run("", "nft", "list", "table", "ip", "t"); !strings.Contains(out, "numgen random mod 2") {
		t.Errorf("nft list lacks the rule:\n%s", out)
	}
	run("", "conntrack", "-L")
	run("", "iptables-legacy", "-A", "INPUT", "-m", "length", "--length", "1:10", "-j", "DROP")
	if _, err := os.Stat("/sys/module/xt_length"); err != nil {
		t.Errorf("xt_length was not loaded on demand: %v", err)
	}
}
