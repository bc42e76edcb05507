package nftables

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// writtenGolden writes a golden table into a new namespace.
func writtenGolden(t *testing.T, name string) (*testNS, *Conn, *nft.Ruleset) {
	t.Helper()
	ns := newTestNS(t)
	c := ns.open()
	rs := goldenTable(t, name)
	must(t, writeTable(c, rs))
	return ns, c, rs
}

func goldenTable(t testing.TB, name string) *nft.Ruleset {
	t.Helper()
	for _, tc := range tableCases(t) {
		if tc.name == name {
			return tc.rs
		}
	}
	t.Fatalf("no table case %s", name)
	return nil
}

// ruleHandle finds a rule's handle in `nft -a list chain`.
func (ns *testNS) ruleHandle(family nft.Family, table, chain, rule string) string {
	ns.t.Helper()
	out := ns.mustNFT("", "-a", "list", "chain", string(family), table, chain)
	for line := range strings.SplitSeq(out, "\n") {
		text, handle, ok := strings.Cut(strings.TrimSpace(line), " # handle ")
		if ok && text == rule {
			return handle
		}
	}
	ns.t.Fatalf("rule %q not in chain %s:\n%s", rule, chain, out)
	return ""
}

// TestHandEditsReadAsDrift changes a written table with nft the way an
// administrator might, and checks that ReadTable sees each change: a rule
// of a shape the codec does not know reads as unsupported (never as a
// rule without the unknown part), a replaced rule reads as its new text,
// and foreign elements and chains show up.
func TestHandEditsReadAsDrift(t *testing.T) {
	ns, c, rs := writtenGolden(t, "session-affinity/ip")
	const tbl = "ip kube-proxy"
	clusterCheck := "ip daddr @cluster-ips reject comment \"Reject traffic to invalid ports of ClusterIPs\""
	handle := ns.ruleHandle(rs.Family, rs.Table, "cluster-ips-check", clusterCheck)
	edits := []string{
		"add rule " + tbl + " services ip daddr 10.96.0.45 counter drop",
		"add rule " + tbl + " services tcp dport 22 accept",
		"add rule " + tbl + " services ip saddr 192.0.2.0/27 ip ttl 1 drop",
		"replace rule " + tbl + " cluster-ips-check handle " + handle + " ip daddr @cluster-ips drop",
		"add element " + tbl + " cluster-ips { 10.96.9.9 }",
		"add chain " + tbl + " intruder",
		"insert rule " + tbl + " nat-prerouting jump intruder",
	}
	ns.mustNFT(strings.Join(edits, "\n")+"\n", "-f", "-")

	got := mustRead(t, c, rs.Family, rs.Table)
	if rs.Equal(got) {
		t.Fatal("the hand-edited table reads back as the rendered one")
	}
	services := got.Chain("services").Rules
	added := services[len(services)-3:]
	t.Logf("foreign rules read as %q", added)
	for i, r := range added {
		if i != 1 && !strings.HasPrefix(string(r), UnsupportedPrefix) {
			t.Errorf("foreign rule %d reads as %q, want the unsupported prefix", i, r)
		}
	}
	// nft lists the second as "tcp dport 22 accept"; the codec spells
	// the same expressions out, which no render emits either.
	if added[1] != "meta l4proto tcp th dport 22 accept" {
		t.Errorf("a tcp dport rule reads as %q", added[1])
	}
	if r := got.Chain("cluster-ips-check").Rules; !slices.Equal(r, []nft.Rule{"ip daddr @cluster-ips drop"}) {
		t.Errorf("the replaced rule reads as %q", r)
	}
	if !slices.Contains(got.Set("cluster-ips").Elements, nft.Element{Key: "10.96.9.9"}) {
		t.Error("the foreign element does not read back")
	}
	if got.Chain("intruder") == nil || got.Chain("nat-prerouting").Rules[0] != "jump intruder" {
		t.Error("the foreign chain and its jump do not read back")
	}
}

// TestOtherTablesUntouched surrounds the table with foreign tables, one of
// them of the same name in the other family and one in family inet, and
// checks that writing, changing and deleting the table leaves them exactly
// as they were.
func TestOtherTablesUntouched(t *testing.T) {
	ns := newTestNS(t)
	c := ns.open()
	ns.mustNFT(`table ip filter {
	set blocked { type ipv4_addr; flags interval; elements = { 192.0.2.0/24 } }
	chain input { type filter hook input priority 0; policy accept; ip saddr @blocked counter drop; }
}
table ip6 kube-proxy {
	comment "someone else's"
	chain x { ip6 daddr ::1 accept; }
}
table inet kube-proxy {
	map m { type ipv4_addr : verdict; elements = { 10.0.0.1 : accept } }
	chain y { type nat hook prerouting priority dstnat; ip daddr vmap @m; }
}
`, "-f", "-")
	foreign := func() string {
		var b strings.Builder
		for _, tbl := range []string{"ip filter", "ip6 kube-proxy", "inet kube-proxy"} {
			b.WriteString(ns.mustNFT("", append([]string{"list", "table"}, strings.Fields(tbl)...)...))
		}
		// Counters count whatever traffic there is; handles are what matter.
		return regexp.MustCompile(`counter packets \d+ bytes \d+`).ReplaceAllString(b.String(), "counter")
	}
	before := foreign()

	rs := goldenTable(t, "loadbalancer-source-ranges/ip")
	must(t, writeTable(c, rs))
	must(t, writeTable(c, rs))
	b := c.NewBatch(rs.Family, rs.Table)
	b.Declare(rs.Sets...)
	b.FlushChain("services")
	must(t, b.AddElements("cluster-ips", []nft.Element{{Key: "10.96.1.1"}}))
	must(t, b.Commit())
	assertSameTable(t, "ip kube-proxy", rs, goldenWithout(rs, "services", "10.96.1.1", mustRead(t, c, rs.Family, rs.Table)))
	b = c.NewBatch(rs.Family, rs.Table)
	b.DeleteTable()
	must(t, b.Commit())
	if got := mustRead(t, c, rs.Family, rs.Table); got != nil {
		t.Errorf("the deleted table reads back:\n%s", got)
	}
	if after := foreign(); after != before {
		t.Errorf("foreign tables changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// goldenWithout undoes the changes TestOtherTablesUntouched makes in
// place, so the rest of the table can be compared with the render.
func goldenWithout(rs *nft.Ruleset, flushed, addedIP string, got *nft.Ruleset) *nft.Ruleset {
	got.Chain(flushed).Rules = rs.Chain(flushed).Rules
	s := got.Set("cluster-ips")
	s.Elements = slices.DeleteFunc(s.Elements, func(e nft.Element) bool { return e.Key == addedIP })
	return got
}

// TestDynamicElementsReadAsNFTLists adds elements to an affinity set the
// way the packet path does, with the set's timeout and their own, and
// compares ReadTable with nft's listing (the remaining lifetimes aside,
// which tick between the two reads).
func TestDynamicElementsReadAsNFTLists(t *testing.T) {
	ns, c, rs := writtenGolden(t, "session-affinity/ip")
	set := rs.Sets[len(rs.Sets)-1].Name
	ns.mustNFT("", "add", "element", "ip", "kube-proxy", set, "{ 10.0.0.1, 10.0.0.2 timeout 1h, 10.0.0.3 timeout 3h }")
	expires := regexp.MustCompile(` expires [0-9hmsd]+`)
	strip := func(rs *nft.Ruleset) string {
		return expires.ReplaceAllString(rs.String(), "")
	}
	listed, read := ns.listTable(rs.Family, rs.Table), mustRead(t, c, rs.Family, rs.Table)
	if strip(listed) != strip(read) {
		t.Errorf("ReadTable and nft differ on dynamic elements:\nnft:\n%s\nReadTable:\n%s", strip(listed), strip(read))
	}
	if got := read.Set(set).Elements; len(got) != 3 || !strings.Contains(got[1].Key, "timeout 1h expires ") {
		t.Errorf("dynamic elements read as %q", got)
	}
}

// TestTypeofSetsRead adds sets declared by expression with nft, beside
// the compact layout's map: one of the expressions the codec writes reads
// back as nft lists it, and one it does not write reads as an
// unsupported type, never as a set of the right type.
func TestTypeofSetsRead(t *testing.T) {
	ns, c, rs := writtenGolden(t, "clusterip-multi-endpoints-compact/ip")
	const tbl = "ip kube-proxy"
	ns.mustNFT("add map "+tbl+" known { typeof ip daddr : th dport; }\n"+
		"add element "+tbl+" known { 10.0.0.1 : 80 }\n"+
		"add set "+tbl+" foreign { typeof ip saddr . tcp dport; }\n", "-f", "-")

	got := mustRead(t, c, rs.Family, rs.Table)
	const shared = "endpoint-addresses-2f"
	if m, want := got.Set(shared), rs.Set(shared); m == nil || want == nil || !m.Equal(want) {
		t.Errorf("the shared map reads as %+v, want %+v", m, want)
	}
	known := got.Set("known")
	if known == nil || !known.Typeof || known.Type != "ip daddr" || known.DataType != "th dport" ||
		!slices.Equal(known.Elements, []nft.Element{{Key: "10.0.0.1", Value: "80"}}) {
		t.Errorf("typeof ip daddr : th dport reads as %+v", known)
	}
	if foreign := got.Set("foreign"); foreign == nil || !foreign.Typeof || foreign.Type != "unsupported expression" {
		t.Errorf("typeof ip saddr . tcp dport reads as %+v", foreign)
	}
}
