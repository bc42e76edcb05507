package cli

import (
	"errors"
	"net/netip"
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
// one that writes a DNAT the text does not show, is refused, whatever
// digest it stores; one whose context lines or comments moved (live
// connection counts) is not.

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

// Context lines and comments carry what the plan read, not what it
// writes: an ipvs plan's connection counts move between plan and apply.
// A file whose context lines or comments differ from the plan made now is
// applied, in every mode.
func TestSavedPlanContextMayDiffer(t *testing.T) {
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
			edited, n := editContext(text)
			// nftables' plan text has neither: the edit only adds some.
			if n == 0 && mode != ModeNFTables {
				t.Fatalf("the plan has no context line or comment to edit:\n%s", text)
			}
			now := transition(mode, from, to, conns(2))
			for name, digest := range map[string]string{"the text's": savedplan.ChangeDigest(edited), "as saved": savedplan.ChangeDigest(text)} {
				if err := checkSavedText(savedWith(edited, digest), now); err != nil {
					t.Errorf("%d context lines and comments edited, digest %s: refused: %v", n, name, err)
				}
			}
		})
	}
}

// editContext changes every context line and comment of a plan's text,
// and counts them; it also adds a comment and a context line after the
// first hunk header.
func editContext(text string) (string, int) {
	var b strings.Builder
	n, added := 0, false
	for line := range strings.Lines(text) {
		switch {
		case strings.HasPrefix(line, "@@") && !added:
			line += "# added\n an added context line\n"
			added = true
		case strings.HasPrefix(line, " "):
			line = strings.TrimSuffix(line, "\n") + " 99 connections\n"
			n++
		case strings.HasPrefix(line, "#"):
			line = "# edited\n"
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
