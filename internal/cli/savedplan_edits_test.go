package cli

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	applyipvs "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/ipvs"
	applynft "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/example"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/savedplan"
)

// The saved-plan edits of issue 33, in every mode, against the text each
// mode really prints: apply FILE compares the change planned now with the
// plan text in the file (checkSavedText, as verifySaved does), so a file
// whose text hides a Service's lines, or whose snapshot was swapped for
// one that writes a DNAT the text does not show, or a rule at another
// place in its chain, is refused, whatever digest it stores; one whose
// comments moved (live connection counts) is not.

// exampleEdit returns the example snapshot with old replaced by new.
func exampleEdit(t *testing.T, in, old, new string) string {
	t.Helper()
	if !strings.Contains(in, old) {
		t.Fatalf("the example has no %q", old)
	}
	return strings.Replace(in, old, new, 1)
}

// withoutCart is the example without the Service shop/cart and its slice.
func withoutCart(t *testing.T) string {
	var keep []string
	for _, doc := range strings.Split(string(example.Snapshot), "\n---\n") {
		if !strings.Contains(doc, "name: cart,") && !strings.Contains(doc, "service-name: cart}") {
			keep = append(keep, doc)
		}
	}
	if len(keep) != len(strings.Split(string(example.Snapshot), "\n---\n"))-2 {
		t.Fatal("the example's shop/cart was not found")
	}
	return strings.Join(keep, "\n---\n")
}

// web13 is the endpoint of default/web that the "drain" plan removes.
const web13 = "\n- addresses: [10.244.1.13]\n  conditions: {ready: true, serving: true, terminating: false}\n  nodeName: node2"

// transition plans the change from the rendered state from (standing for
// the kernel) to to, in the mode, with the ipvs real servers' connection
// counts conns.
func transition(mode Mode, from, to *desired, conns map[diff.IPVSDestKey]diff.IPVSConns) kernelPlan {
	switch mode {
	case ModeNFTables:
		var ps []*applynft.Plan
		for i, r := range to.nftables {
			ps = append(ps, &applynft.Plan{Family: r.Family, Desired: r, Live: from.nftables[i], Changes: diff.NFTables(r, from.nftables[i])})
		}
		return newNFTPlan(ps)
	case ModeIPVS:
		own := render.IPVSOwnership(nil)
		var ps []*applyipvs.Plan
		for i, r := range to.ipvs {
			opts := diff.IPVSOptions{Conns: conns, DeviceExists: true}
			ps = append(ps, &applyipvs.Plan{Desired: r, Live: from.ipvs[i], Changes: diff.IPVS(r, from.ipvs[i], own, opts)})
		}
		return newIPVSPlan(ps, own)
	}
	own, rulesets := render.IPTablesOwnership(), func(d *desired) []*ipt.Ruleset { return d.iptables }
	if mode == ModeUserspace {
		own = render.UserspaceOwnership()
		rulesets = func(d *desired) []*ipt.Ruleset {
			var out []*ipt.Ruleset
			for _, u := range d.userspace {
				out = append(out, u.IPTables)
			}
			return out
		}
	}
	var ps []*applyipt.Plan
	for i, r := range rulesets(to) {
		live := rulesets(from)[i]
		ps = append(ps, &applyipt.Plan{Desired: r, Live: live, Changes: diff.IPTables(r, live, own)})
	}
	return newIPTablesPlan("iptables-nft", mode, own, ps)
}

// planText is what plan prints and plan --out saves.
func mustPlanText(t *testing.T, p kernelPlan) string {
	t.Helper()
	var b strings.Builder
	if err := p.writeText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// savedWith is a saved plan whose file shows text, with digest stored.
func savedWith(text, digest string) *savedplan.Plan {
	return &savedplan.Plan{Changes: savedplan.Changes{Diff: text, SHA256: digest}}
}

// withoutLines drops every change line that mentions one of marks: a
// Service's lines cut from a plan's text.
func withoutLines(text string, marks ...string) string {
	var b strings.Builder
	for line := range strings.Lines(text) {
		cut := false
		for _, m := range marks {
			cut = cut || (strings.Contains(line, m) && !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "#"))
		}
		if !cut {
			b.WriteString(line)
		}
	}
	return b.String()
}

func TestSavedPlanEditsAreRefused(t *testing.T) {
	for _, mode := range kernelModes {
		t.Run(string(mode), func(t *testing.T) {
			empty := renderFor(t, nodeOnly, mode)
			want := renderFor(t, string(example.Snapshot), mode)
			honest := transition(mode, empty, want, nil)
			text := mustPlanText(t, honest)
			if err := checkSavedText(savedWith(text, savedplan.ChangeDigest(text)), honest); err != nil {
				t.Fatalf("the plan as saved is refused: %v", err)
			}

			// (a) shop/cart's lines cut from the text, the digest left
			// alone, or made again from the cut text.
			cut := withoutLines(text, "10.96.0.30", "shop/cart", "30080")
			if cut == text {
				t.Fatalf("no line of shop/cart in the plan:\n%s", text)
			}
			for name, digest := range map[string]string{"kept": savedplan.ChangeDigest(text), "recomputed": savedplan.ChangeDigest(cut)} {
				if err := checkSavedText(savedWith(cut, digest), honest); err == nil {
					t.Errorf("a text without shop/cart's lines, digest %s: applied", name)
				}
			}

			// (b) the snapshot swapped for one that sends default/web to
			// 6.6.6.6 (userspace mode's rules name no endpoint: there its
			// portal moves to 6.6.6.6), the reviewed text kept, and the
			// stored digest made from the swapped plan or left as the
			// text's.
			old, evilIP := "[10.244.0.11]", "[6.6.6.6]"
			if mode == ModeUserspace {
				old = "clusterIPs: [10.96.0.10]"
				evilIP = "clusterIPs: [6.6.6.6]"
			}
			evilSnap := exampleEdit(t, string(example.Snapshot), old, evilIP)
			if mode == ModeUserspace {
				evilSnap = exampleEdit(t, evilSnap, "clusterIP: 10.96.0.10", "clusterIP: 6.6.6.6")
			}
			swapped := transition(mode, empty, renderFor(t, evilSnap, mode), nil)
			swappedText := mustPlanText(t, swapped)
			if !strings.Contains(swappedText, "6.6.6.6") {
				t.Fatalf("the swapped snapshot writes no 6.6.6.6:\n%s", swappedText)
			}
			for name, digest := range map[string]string{"recomputed": savedplan.ChangeDigest(swappedText), "the text's": savedplan.ChangeDigest(text)} {
				err := checkSavedText(savedWith(text, digest), swapped)
				if !errors.Is(err, savedplan.ErrStale) && !errors.Is(err, savedplan.ErrEdited) {
					t.Errorf("a swapped snapshot, digest %s: got %v, want it refused", name, err)
				}
			}
		})
	}
}

// Comments carry what the plan read, not what it writes: an ipvs plan's
// connection counts, printed only in "# draining:" comments, move between
// plan and apply. A file whose comments differ from the plan made now is
// applied, in every mode; one whose context lines differ is not, since
// they say where in a chain a change goes.
func TestSavedPlanCommentsMayDiffer(t *testing.T) {
	after := exampleEdit(t, withoutCart(t), web13, "")
	web := netip.MustParseAddrPort("10.244.1.13:8080")
	for _, mode := range kernelModes {
		t.Run(string(mode), func(t *testing.T) {
			from, to := renderFor(t, string(example.Snapshot), mode), renderFor(t, after, mode)
			conns := func(n int) map[diff.IPVSDestKey]diff.IPVSConns {
				out := map[diff.IPVSDestKey]diff.IPVSConns{}
				for _, rs := range from.ipvs {
					for _, vs := range rs.VirtualServers {
						for i, r := range vs.RealServers {
							if netip.AddrPortFrom(r.Address, r.Port) == web {
								// Draining already: kept at weight 0 while
								// its connections last.
								vs.RealServers[i].Weight = 0
								out[diff.IPVSDestKey{Service: diff.IPVSKey(vs), Dest: web}] = diff.IPVSConns{Active: n}
							}
						}
					}
				}
				return out
			}
			text := mustPlanText(t, transition(mode, from, to, conns(7)))
			if mode == ModeIPVS && !strings.Contains(text, "# draining: 7 active") {
				t.Fatalf("the ipvs plan shows no draining real server:\n%s", text)
			}
			// Only ipvs' text has comments here; in the others the edit
			// only adds one.
			edited, n := editComments(text)
			if n == 0 && mode == ModeIPVS {
				t.Fatalf("the plan has no comment to edit:\n%s", text)
			}
			now := transition(mode, from, to, conns(2))
			for name, digest := range map[string]string{"the text's": savedplan.ChangeDigest(edited), "as saved": savedplan.ChangeDigest(text)} {
				if err := checkSavedText(savedWith(edited, digest), now); err != nil {
					t.Errorf("%d comments edited, connection counts moved, digest %s: refused: %v", n, name, err)
				}
			}
			// A context line edited, or one added, is another text.
			for name, ctx := range map[string]string{"edited": strings.Replace(text, "\n ", "\n  ", 1), "added": strings.Replace(text, " @@\n", " @@\n an added context line\n", 1)} {
				if ctx == text && mode == ModeNFTables {
					continue // nftables' plan text has no context line here
				}
				if err := checkSavedText(savedWith(ctx, savedplan.ChangeDigest(ctx)), now); !errors.Is(err, savedplan.ErrStale) {
					t.Errorf("a context line %s: got %v, want it refused", name, err)
				}
			}
		})
	}
}

// editComments changes every comment of a plan's text, and counts them;
// it also adds one after the first hunk header.
func editComments(text string) (string, int) {
	var b strings.Builder
	n, added := 0, false
	for line := range strings.Lines(text) {
		switch {
		case strings.HasPrefix(line, "@@") && !added:
			line += "# added\n"
			added = true
		case strings.HasPrefix(line, "#"):
			line = "# edited 99 connections\n"
			n++
		}
		b.WriteString(line)
	}
	return b.String(), n
}

// What apply renders for, once the plan's settings are parsed, must be the
// mode and node the file names at its top.
func TestCheckSavedSettings(t *testing.T) {
	s := &renderSettings{mode: ModeNFTables}
	s.cluster.NodeName = "node1"
	for _, p := range []*savedplan.Plan{{Mode: "iptables", Node: "node1"}, {Mode: "nftables", Node: "node2"}} {
		if err := checkSavedSettings("node.plan", p, s); !errors.Is(err, savedplan.ErrEdited) {
			t.Errorf("a plan for %s on %s, rendered as nftables on node1: got %v", p.Mode, p.Node, err)
		}
	}
	if err := checkSavedSettings("node.plan", &savedplan.Plan{Mode: "nftables", Node: "node1"}, s); err != nil {
		t.Errorf("the plan's own mode and node: %v", err)
	}
}

// A changed chain is written whole, from the plan made now, and the order
// of its rules is their meaning. An input that renders the same rules with
// the one a chain gains at another place (here the rendered chain itself
// is edited, standing for any snapshot that does so) shows the same "@@",
// "+" and "-" lines; only the context lines around the added rule tell.
// apply refuses it, in every mode. The chains: iptables' KUBE-FW-* of
// shop/frontend gains a source range; nftables' cluster-ips-check its drop
// of unallocated ClusterIPs, moved before the reject of invalid ports;
// ipvs' KUBE-SOURCE-RANGES-FIREWALL its RETURN, moved after the DROP;
// userspace's KUBE-NODEPORT-NON-LOCAL shop/cart's ACCEPT.
func TestSavedPlanRuleMovedIsRefused(t *testing.T) {
	ranges := exampleEdit(t, string(example.Snapshot), "loadBalancerSourceRanges: [203.0.113.0/24]",
		"loadBalancerSourceRanges: [203.0.113.0/24, 198.51.100.0/24]")
	for mode, fromTo := range map[Mode][2]string{
		ModeIPTables: {string(example.Snapshot), ranges}, ModeNFTables: {nodeOnly, string(example.Snapshot)},
		ModeIPVS: {nodeOnly, string(example.Snapshot)}, ModeUserspace: {withoutCart(t), string(example.Snapshot)},
	} {
		t.Run(string(mode), func(t *testing.T) {
			from, to, moved := renderFor(t, fromTo[0], mode), renderFor(t, fromTo[1], mode), renderFor(t, fromTo[1], mode)
			if !moveAddedRule(mode, from, moved) {
				t.Fatal("no chain gains exactly one rule")
			}
			text := mustPlanText(t, transition(mode, from, to, nil))
			now := transition(mode, from, moved, nil)
			if nowText := mustPlanText(t, now); nowText == text || hunksAndChanges(text) != hunksAndChanges(nowText) {
				t.Fatalf("want the move seen in the context lines only; the plan file shows:\n%s\nplanned now:\n%s", text, nowText)
			}
			if err := checkSavedText(savedWith(text, savedplan.ChangeDigest(text)), now); !errors.Is(err, savedplan.ErrStale) {
				t.Errorf("a rule added at another place: got %v, want it refused", err)
			}
		})
	}
}

// moveAddedRule moves, in the first chain of d that holds the rules of
// from's chain and one more, that rule: to the front, or from the front
// to the end. The iptables mode's dispatch chains are passed over: their
// order means nothing, and apply edits them in place, in the order the
// text shows.
func moveAddedRule(mode Mode, from, d *desired) bool {
	if mode == ModeNFTables {
		for i, rs := range d.nftables {
			for _, c := range rs.Chains {
				if old := from.nftables[i].Chain(c.Name); old != nil && moveAdded(old.Rules, c.Rules) {
					return true
				}
			}
		}
		return false
	}
	var froms, tos []*ipt.Ruleset
	for i := range d.iptables {
		froms, tos = append(froms, from.iptables[i]), append(tos, d.iptables[i])
	}
	for i := range d.ipvs {
		froms, tos = append(froms, from.ipvs[i].IPTables), append(tos, d.ipvs[i].IPTables)
	}
	for i := range d.userspace {
		froms, tos = append(froms, from.userspace[i].IPTables), append(tos, d.userspace[i].IPTables)
	}
	own := render.IPTablesOwnership()
	for i, rs := range tos {
		for _, tbl := range rs.Tables {
			for _, c := range tbl.Chains {
				if ipt.IsBuiltin(tbl.Name, c.Name) || (mode == ModeIPTables && own.IsUnordered(tbl.Name, c.Name)) {
					continue
				}
				if old := froms[i].Table(tbl.Name).Chain(c.Name); old != nil && moveAdded(old.Rules, c.Rules) {
					return true
				}
			}
		}
	}
	return false
}

// moveAdded moves the one rule that rules hold and old does not, if rules
// are old's, not none, with one more: to the front, or from the front to
// the end.
func moveAdded[R comparable](old, rules []R) bool {
	if len(old) == 0 || len(rules) != len(old)+1 {
		return false
	}
	for i, r := range rules {
		rest := slices.Delete(slices.Clone(rules), i, i+1)
		if !slices.Equal(rest, old) {
			continue
		}
		if i == 0 {
			copy(rules, append(rest, r))
		} else {
			copy(rules, append([]R{r}, rest...))
		}
		return true
	}
	return false
}

// hunksAndChanges is what a saved plan's check compared before context
// lines counted: the "@@", "+" and "-" lines.
func hunksAndChanges(text string) string {
	var b strings.Builder
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, "@@") || strings.HasPrefix(line, "+") || strings.HasPrefix(line, "-") {
			b.WriteString(line)
		}
	}
	return b.String()
}
