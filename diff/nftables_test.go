package diff

import (
	"encoding/json"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

// nftTable is a synthetic table of n Services x 3 endpoints in which every
// seventh Service has ClientIP affinity (per-endpoint chains and dynamic
// sets) and every tenth is a NodePort.
func nftTable(n int) *nodetable.ServiceTable {
	t := synthetic.Table(n, 3)
	for i := range t.Ports {
		if i%7 == 3 {
			t.Ports[i].AffinityTimeoutSeconds = 10800
		}
	}
	return t
}

func nftRender(t *nodetable.ServiceTable) *nft.Ruleset {
	cfg := render.DefaultConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.128.0.0/9")}
	return render.NFTables(t, cfg)
}

// cloneNFT returns a deep copy of rs through its text form.
func cloneNFT(t *testing.T, rs *nft.Ruleset) *nft.Ruleset {
	t.Helper()
	c, err := nft.Parse([]byte(rs.String()))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// canonical is rs's listing with sets and chains sorted by name and
// elements sorted: the order nft gives no meaning to is taken out.
func canonical(rs *nft.Ruleset) string {
	if rs == nil {
		return "<no table>"
	}
	c := *rs
	c.Sets = slices.Clone(rs.Sets)
	c.Chains = slices.Clone(rs.Chains)
	for i, s := range c.Sets {
		cs := *s
		cs.Elements = slices.Clone(s.Elements)
		cs.SortElements()
		c.Sets[i] = &cs
	}
	slices.SortFunc(c.Sets, func(a, b *nft.Set) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(c.Chains, func(a, b *nft.Chain) int { return strings.Compare(a.Name, b.Name) })
	return c.String()
}

// shuffled returns a copy of rs with sets, chains and elements in random
// order, as a kernel listing after incremental changes may hold them.
func shuffled(t *testing.T, rs *nft.Ruleset, r *rand.Rand) *nft.Ruleset {
	c := cloneNFT(t, rs)
	r.Shuffle(len(c.Sets), func(i, j int) { c.Sets[i], c.Sets[j] = c.Sets[j], c.Sets[i] })
	r.Shuffle(len(c.Chains), func(i, j int) { c.Chains[i], c.Chains[j] = c.Chains[j], c.Chains[i] })
	for _, s := range c.Sets {
		r.Shuffle(len(s.Elements), func(i, j int) { s.Elements[i], s.Elements[j] = s.Elements[j], s.Elements[i] })
	}
	return c
}

func planText(t *testing.T, cs *NFTablesChangeSet) string {
	t.Helper()
	var b strings.Builder
	if err := cs.WriteText(&b, "kernel"); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestNFTablesOrderDoesNotCount(t *testing.T) {
	desired := nftRender(nftTable(60))
	r := rand.New(rand.NewPCG(3, 4))
	for range 5 {
		cs := NFTables(desired, shuffled(t, desired, r))
		if !cs.Empty() || !cs.Summary().Empty() {
			t.Fatalf("a reordered listing of the same table gives changes:\n%s", planText(t, cs))
		}
		if text := planText(t, cs); text != "" {
			t.Fatalf("an empty change set writes text:\n%s", text)
		}
	}
}

func TestNFTablesFromNothing(t *testing.T) {
	desired := nftRender(nftTable(40))
	cs := NFTables(desired, nil)
	if cs.Table != CreateTable || cs.Comment != desired.Comment {
		t.Fatalf("table change %q comment %q, want a new table with comment %q", cs.Table, cs.Comment, desired.Comment)
	}
	var rules, elements int
	for _, c := range desired.Chains {
		rules += len(c.Rules)
	}
	for _, s := range desired.Sets {
		if !IsDynamic(s) {
			elements += len(s.Elements)
		}
	}
	want := Summary{ChainsAdded: len(desired.Chains), RulesAdded: rules, SetsAdded: len(desired.Sets), ElementsAdded: elements}
	if got := cs.Summary(); got != want {
		t.Fatalf("summary %+v, want %+v", got, want)
	}
	// Creates keep the render's order, so the result lists as the render does.
	if got := ReplayNFTables(nil, cs); !got.Equal(desired) {
		t.Fatalf("replaying the change set onto nothing gives\n%s\nwant\n%s", got, desired)
	}
}

// serviceChanges returns the names of the sets and chains a change set
// touches, and the elements it adds and removes.
func serviceChanges(cs *NFTablesChangeSet) (names []string, elems []nft.Element) {
	for _, c := range cs.Sets {
		names = append(names, c.Set.Name)
		elems = append(append(elems, c.Added...), c.Removed...)
	}
	for _, c := range cs.Chains {
		names = append(names, c.Name)
	}
	return names, elems
}

// TestNFTablesOneEndpointChange checks that one endpoint changing touches
// only its Service's chains, sets and elements, and that the change does
// not grow with the table.
func TestNFTablesOneEndpointChange(t *testing.T) {
	for _, svc := range []int{20, 24} { // without and with affinity
		counts := map[int]Summary{}
		for _, n := range []int{100, 1000} {
			base := nftTable(n)
			live := shuffled(t, nftRender(base), rand.New(rand.NewPCG(uint64(n), 1)))
			cs := NFTables(nftRender(synthetic.WithOneEndpointChanged(base, svc, 1)), live)
			if cs.Empty() || cs.Table != "" {
				t.Fatalf("service %d: change set %+v, want element and chain changes only", svc, cs)
			}
			id := base.Ports[svc].Name
			mark := id.Namespace + "/" + id.Name + "/"
			names, elems := serviceChanges(cs)
			for _, name := range names {
				if !strings.Contains(name, mark) && name != "hairpin-connections" && name != "service-ips" {
					t.Errorf("service %d: the change touches %s, which is not the Service's", svc, name)
				}
			}
			for _, e := range elems {
				if !strings.Contains(e.Value, mark) && e.Value != "" {
					t.Errorf("service %d: the change touches element %+v", svc, e)
				}
			}
			counts[n] = cs.Summary()
		}
		if counts[100] != counts[1000] || counts[100].Empty() {
			t.Errorf("service %d: the change differs with the table's size: %+v at 100, %+v at 1000", svc, counts[100], counts[1000])
		}
	}
}

// drift is one hand edit of a live table.
type drift struct {
	name string
	edit func(rs *nft.Ruleset)
}

var drifts = []drift{
	{"element deleted", func(rs *nft.Ruleset) { s := rs.Set("service-ips"); s.Elements = s.Elements[1:] }},
	{"element value changed", func(rs *nft.Ruleset) { rs.Set("service-ips").Elements[2].Value = "drop" }},
	{"element added", func(rs *nft.Ruleset) {
		s := rs.Set("cluster-ips")
		s.Elements = append(s.Elements, nft.Element{Key: "10.99.99.99"})
	}},
	{"rule edited", func(rs *nft.Ruleset) { rs.Chain("reject-chain").Rules[0] = "drop" }},
	{"rule added", func(rs *nft.Ruleset) { c := rs.Chain("services"); c.Rules = append(c.Rules, "counter") }},
	{"chain added", func(rs *nft.Ruleset) {
		rs.Chains = append(rs.Chains, &nft.Chain{Name: "mine", Rules: []nft.Rule{"accept"}})
	}},
	{"chain deleted", func(rs *nft.Ruleset) { rs.Chains = rs.Chains[:len(rs.Chains)-1] }},
	{"set deleted", func(rs *nft.Ruleset) {
		rs.Sets = slices.DeleteFunc(rs.Sets, func(s *nft.Set) bool { return s.Name == "firewall-ips" })
	}},
	{"set added", func(rs *nft.Ruleset) { rs.Sets = append(rs.Sets, &nft.Set{Name: "extra", Type: "ipv4_addr"}) }},
}

// TestNFTablesDriftIsRepaired checks, for each hand edit, that the change
// set turns the edited table back into the desired one and nothing else.
func TestNFTablesDriftIsRepaired(t *testing.T) {
	desired := nftRender(nftTable(30))
	for _, d := range drifts {
		live := cloneNFT(t, desired)
		d.edit(live)
		cs := NFTables(desired, live)
		if cs.Empty() || cs.Table != "" {
			t.Fatalf("%s: change set %+v, want an in-place repair", d.name, cs)
		}
		if got := ReplayNFTables(live, cs); canonical(got) != canonical(desired) {
			t.Fatalf("%s: the repair gives\n%s\nwant\n%s", d.name, canonical(got), canonical(desired))
		}
		if names, _ := serviceChanges(cs); len(names) != 1 {
			t.Errorf("%s: the repair touches %v, want one object", d.name, names)
		}
	}
}

func TestNFTablesDynamicElementsAreNotManaged(t *testing.T) {
	desired := nftRender(nftTable(10))
	live := cloneNFT(t, desired)
	var aff *nft.Set
	for _, s := range live.Sets {
		if IsDynamic(s) {
			aff = s
		}
	}
	if aff == nil {
		t.Fatal("the table has no affinity set")
	}
	aff.Elements = []nft.Element{{Key: "10.0.0.7 timeout 3h expires 2h59m"}}
	if cs := NFTables(desired, live); !cs.Empty() {
		t.Fatalf("packet-path elements of %s show as changes:\n%s", aff.Name, planText(t, cs))
	}
}

// TestNFTablesDeclarationChangeRebuilds checks that what the kernel cannot
// change in place makes the table rebuilt, with the reason named.
func TestNFTablesDeclarationChangeRebuilds(t *testing.T) {
	desired := nftRender(nftTable(10))
	edits := []struct {
		what string
		edit func(rs *nft.Ruleset)
	}{
		{"map service-ips", func(rs *nft.Ruleset) { rs.Set("service-ips").Comment = "other" }},
		{"set cluster-ips", func(rs *nft.Ruleset) { rs.Set("cluster-ips").Flags = []nft.SetFlag{nft.FlagInterval} }},
		{"chain nat-output", func(rs *nft.Ruleset) { rs.Chain("nat-output").Base.Priority = "-90" }},
		{"chain reject-chain", func(rs *nft.Ruleset) { rs.Chain("reject-chain").Comment = "" }},
		{"table comment", func(rs *nft.Ruleset) { rs.Comment = "" }},
	}
	for _, e := range edits {
		live := cloneNFT(t, desired)
		e.edit(live)
		cs := NFTables(desired, live)
		if cs.Table != RecreateTable || !strings.Contains(strings.Join(cs.Reasons, "; "), e.what) {
			t.Errorf("%s changed: table change %q, reasons %q", e.what, cs.Table, cs.Reasons)
		}
		if !strings.Contains(planText(t, cs), "rebuilt in one transaction") {
			t.Errorf("%s changed: the plan does not say the table is rebuilt", e.what)
		}
		if got := ReplayNFTables(live, cs); canonical(got) != canonical(desired) {
			t.Errorf("%s changed: replay gives\n%s", e.what, canonical(got))
		}
	}
}

func TestDeleteNFTables(t *testing.T) {
	if cs := DeleteNFTables(nil); !cs.Empty() {
		t.Fatalf("deleting an absent table: %+v", cs)
	}
	live := nftRender(nftTable(20))
	cs := DeleteNFTables(live)
	if cs.Table != DeleteTable || ReplayNFTables(live, cs) != nil {
		t.Fatalf("reset does not delete the table: %+v", cs.Table)
	}
	s := cs.Summary()
	if s.ChainsDeleted != len(live.Chains) || s.SetsDeleted != len(live.Sets) || s.ChainsAdded+s.SetsAdded+s.ElementsAdded+s.RulesAdded != 0 {
		t.Fatalf("reset summary %+v for %d chains", s, len(live.Chains))
	}
}

// TestNFTablesPlanText checks the plan of a one-endpoint change: it names
// the one chain, shows the old and new rule, is stable under reordering of
// the live listing, and survives JSON.
func TestNFTablesPlanText(t *testing.T) {
	base := nftTable(50)
	desired := nftRender(synthetic.WithOneEndpointChanged(base, 20, 1))
	live := nftRender(base)
	cs := NFTables(desired, live)
	text := planText(t, cs)
	if len(cs.Chains) != 1 || cs.Chains[0].Verb != ReplaceChain {
		t.Fatalf("want one replaced chain, got:\n%s", text)
	}
	ch := cs.Chains[0]
	for _, want := range []string{
		"@@ chain " + ch.Name + ": changed @@\n",
		"-\t\t" + string(ch.Old[0]) + "\n",
		"+\t\t" + string(ch.Rules[0]) + "\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the plan lacks %q:\n%s", want, text)
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	if again := planText(t, NFTables(desired, shuffled(t, live, r))); again != text {
		t.Errorf("the plan depends on the live listing's order:\n%s\nvs\n%s", text, again)
	}
	data, err := json.Marshal(cs)
	if err != nil {
		t.Fatal(err)
	}
	var back NFTablesChangeSet
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, cs) {
		t.Fatalf("JSON round trip changed the change set:\n%s", data)
	}
}

// TestNFTablesPlanTextShowsElements checks that changed elements appear in
// the plan as nft lists them.
func TestNFTablesPlanTextShowsElements(t *testing.T) {
	desired := nftRender(nftTable(10))
	live := cloneNFT(t, desired)
	old := live.Set("service-ips").Elements[0]
	live.Set("service-ips").Elements[0].Value = "drop"
	text := planText(t, NFTables(desired, live))
	for _, want := range []string{
		"@@ map service-ips: elements @@\n",
		"-\t\t\t" + old.Key + " : drop\n",
		"+\t\t\t" + old.Key + " : " + old.Value + "\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the plan lacks %q:\n%s", want, text)
		}
	}
}

// A changed rule in a base chain is a change of that chain's rules only:
// the plan must not call it a declaration change, nor print the base
// chain's hook line as added and removed, and the table is not rebuilt.
func TestNFTablesBaseChainRuleChangeIsNotARedeclaration(t *testing.T) {
	desired := nftRender(nftTable(10))
	live := cloneNFT(t, desired)
	c := live.Chain("nat-output")
	if c == nil || c.Base == nil || len(c.Rules) == 0 {
		t.Fatal("nat-output is not a base chain with rules")
	}
	c.Rules[0] += " counter"
	cs := NFTables(desired, live)
	text := planText(t, cs)
	if cs.Table == RecreateTable || len(cs.Reasons) > 0 || len(cs.Chains) != 1 || cs.Chains[0].DeclarationChanged() {
		t.Fatalf("a rule change is planned as a declaration change:\n%s", text)
	}
	if !strings.Contains(text, "@@ chain nat-output: changed @@") || strings.Contains(text, "type nat hook") {
		t.Errorf("plan text:\n%s", text)
	}
}
