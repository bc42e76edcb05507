package iptables_test

import (
	"context"
	"testing"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// TestNFTReadWithoutSave: on the nft backend the client reads its tables
// over netlink (ReadNFT) and runs no iptables-nft-save, with the result
// iptables-nft-save gives; a foreign rule ReadNFT cannot print sends the
// read to iptables-nft-save, with the same result again.
func TestNFTReadWithoutSave(t *testing.T) {
	n := newNode(t, applyipt.NFT)
	withPods(t, n)
	snap := snapshot(web("10.244.0.11", "10.244.1.12"), other("10.244.0.13"))
	n.apply(t, snap)
	bySave := &applyipt.Client{Exec: nsExec{ns: n.lab.Node().Name()}, Backend: applyipt.NFT}
	for _, step := range []struct {
		edit   string
		netlnk bool
	}{
		// Each edit moves the generation, so the next read is a dump.
		{"-t nat -A PREROUTING -s 192.0.2.0/24 -p udp -m udp --dport 53 -j ACCEPT", true},
		{"-A INPUT -p tcp -m multiport --dports 22,80 -j ACCEPT", false},
	} {
		n.ipt(t, step.edit)
		saves := n.rec.saves
		got := n.read(t)
		if ran := n.rec.saves != saves; ran == step.netlnk {
			t.Errorf("after %q: iptables-nft-save ran: %v, want %v", step.edit, ran, !step.netlnk)
		}
		want, err := bySave.Read(context.Background(), nodetable.IPv4)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Equal(want) {
			t.Errorf("after %q the client read\n%s\nwhere iptables-nft-save gives\n%s", step.edit, got, want)
		}
		n.assertNoChanges(t, snap)
	}
	// A read that fails falls back too.
	n.client.ReadNFT = func(nodetable.Family, []ipt.TableName) ([]byte, error) { return []byte("*nat\n"), nil }
	n.ipt(t, "-t nat -D PREROUTING 1")
	if rs := n.read(t); rs.Table(ipt.NAT) == nil || rs.Table(ipt.NAT).Chain("KUBE-SERVICES") == nil {
		t.Errorf("a reader's unparsable text was used:\n%s", rs)
	}
}
