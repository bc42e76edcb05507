package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/example"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/savedplan"
)

// The edits of issue 33 to a saved plan, with the real binary: apply FILE
// writes what the file's text shows, or nothing. A text with a Service's
// lines cut, a snapshot swapped for one that writes a DNAT to 6.6.6.6
// (with the digest made again or not), and a top-level mode that is not
// the settings' are refused, with exit 2 and the kernel as it was; the
// plan as saved then applies, and writes no 6.6.6.6.
func TestE2ESavedPlanTextEdits(t *testing.T) {
	forEachBackend(t, func(t *testing.T, n *e2eNode) {
		testSavedPlanTextEdits(t, n, exampleArgs, "iptables", func() string { return n.save() })
	})
}

func TestE2ESavedPlanTextEditsNFTables(t *testing.T) {
	t.Parallel()
	n := newE2ENode(t, "nft")
	testSavedPlanTextEdits(t, n, nftablesArgs, "nftables", func() string { return n.nft("list", "ruleset") })
}

func TestE2ESavedPlanTextEditsUserspace(t *testing.T) {
	t.Parallel()
	n := newE2ENode(t, "nft")
	testSavedPlanTextEdits(t, n, userspaceArgs, "userspace", func() string { return n.save() })
}

// testSavedPlanTextEdits runs the text edits in the mode of args, with a
// way to read the whole ruleset.
func testSavedPlanTextEdits(t *testing.T, n *e2eNode, args []string, mode string, kernel func() string) {
	path, reviewed := firstPlan(t, n, args)
	refuse := refuser(t, n, kernel)

	// shop/cart's lines cut from the text: with the digest left alone,
	// the file contradicts itself; made again, the text shows less than
	// apply would write.
	cut := *reviewed
	cut.Changes.Diff = cutLines(t, reviewed.Changes.Diff, "shop/cart", "10.96.0.30")
	refuse("a cut text, digest kept", storePlan(t, n, "cut.plan", &cut, 0o600), "changes.sha256 is not the digest of its changes.diff")
	cut.Changes.SHA256 = savedplan.ChangeDigest(cut.Changes.Diff)
	refuse("a cut text, digest recomputed", storePlan(t, n, "cut2.plan", &cut, 0o600), "differ from the plan text that was reviewed, at change line")

	// The snapshot of a plan that sends default/web to 6.6.6.6 (in
	// userspace mode, whose rules name no endpoint, that moves its
	// portal there), the reviewed text kept, the digest the swapped
	// plan's or the text's.
	evilSnap := strings.Replace(string(example.Snapshot), "[10.244.0.11]", "[6.6.6.6]", 1)
	if mode == "userspace" {
		evilSnap = strings.ReplaceAll(string(example.Snapshot), "10.96.0.10", "6.6.6.6")
	}
	evilYAML := filepath.Join(n.dir, "evil.yaml")
	writeFile(t, evilYAML, evilSnap)
	evilPath := filepath.Join(n.dir, "evil.plan")
	evilArgs := append([]string{"-f", evilYAML, "--node-name=node1"}, nonExample(args)...)
	expect(t, n.run("plan", evilArgs...), ExitChanges, "6.6.6.6")
	expect(t, n.run("plan", append(evilArgs, "--out="+evilPath)...), ExitChanges)
	evil := loadPlan(t, evilPath)
	swapped := *reviewed
	swapped.Snapshot, swapped.Changes.SHA256 = evil.Snapshot, evil.Changes.SHA256
	refuse("a swapped snapshot, its digest", storePlan(t, n, "swap.plan", &swapped, 0o600), "changes.sha256 is not the digest")
	swapped.Changes.SHA256 = reviewed.Changes.SHA256
	refuse("a swapped snapshot, the text's digest", storePlan(t, n, "swap2.plan", &swapped, 0o600), "differ from the plan text that was reviewed")

	other := "ipvs"
	refuse("another top-level mode", rewritePlan(t, n, path, `"mode": "`+mode+`",`, `"mode": "`+other+`",`),
		`settings say mode="`+mode+`", but the plan is for "`+other+`"`)

	expect(t, n.run("apply", path), ExitOK, "Applied")
	if got := kernel(); strings.Contains(got, "6.6.6.6") {
		t.Fatalf("6.6.6.6 was written:\n%s", got)
	}
}

// A plan file that another user owns, or that its group or others may
// write, is refused as the lock file is.
func TestE2ESavedPlanFileOwner(t *testing.T) {
	forEachBackend(t, func(t *testing.T, n *e2eNode) {
		_, reviewed := firstPlan(t, n, exampleArgs)
		refuse := refuser(t, n, func() string { return n.save() })
		refuse("a world-writable plan", storePlan(t, n, "open.plan", reviewed, 0o666), "writable by its group or others")
		refuse("a group-writable plan", storePlan(t, n, "group.plan", reviewed, 0o620), "writable by its group or others")
		theirs := storePlan(t, n, "theirs.plan", reviewed, 0o600)
		if err := os.Chown(theirs, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		refuse("another user's plan", theirs, "owned by uid 65534, not by the running user")
		expect(t, n.run("apply", storePlan(t, n, "mine.plan", reviewed, 0o600)), ExitOK, "Applied")
	})
}

// A sysctl is a change of the plan, shown and written as shown: an empty
// plan, made while route_localnet was 1, is refused once it is 0 and
// leaves it 0; plan then shows the change, and its apply sets it.
func TestE2ESavedPlanSysctls(t *testing.T) {
	forEachBackend(t, func(t *testing.T, n *e2eNode) {
		expect(t, n.run("apply", exampleArgs...), ExitOK)
		const localnet = "net.ipv4.conf.all.route_localnet"
		if v := n.sysctl(localnet, ""); v != "1" {
			t.Fatalf("%s = %s after apply", localnet, v)
		}
		empty := filepath.Join(n.dir, "empty.plan")
		expect(t, n.run("plan", append(exampleArgs, "--out="+empty)...), ExitOK, "No changes")
		n.sysctl(localnet, "0")
		refuser(t, n, func() string { return n.save() })("an empty plan after route_localnet was cleared", empty, `planned now: "--- live sysctl"`)
		if v := n.sysctl(localnet, ""); v != "0" {
			t.Fatalf("%s = %s after a refused empty plan", localnet, v)
		}
		again := filepath.Join(n.dir, "again.plan")
		expect(t, n.run("plan", append(exampleArgs, "--out="+again)...), ExitChanges,
			"-"+localnet+" = 0\n+"+localnet+" = 1\n", "sysctls ~1")
		expect(t, n.run("apply", again), ExitOK, "Applied")
		if v := n.sysctl(localnet, ""); v != "1" {
			t.Fatalf("%s = %s after the plan that sets it", localnet, v)
		}
	})
}

// firstPlan saves the plan of args on the empty node.
func firstPlan(t *testing.T, n *e2eNode, args []string) (string, *savedplan.Plan) {
	t.Helper()
	path := filepath.Join(n.dir, "node.plan")
	expect(t, n.run("plan", append(args, "--out="+path)...), ExitChanges)
	return path, loadPlan(t, path)
}

// refuser returns a check that apply of a plan file exits 2 naming want,
// with the kernel, as read by kernel, as it was.
func refuser(t *testing.T, n *e2eNode, kernel func() string) func(why, plan, want string) {
	return func(why, plan, want string) {
		t.Helper()
		before := kernel()
		r := n.run("apply", plan)
		if r.code != ExitError || !strings.Contains(r.stderr, want) {
			t.Fatalf("%s: want exit %d naming %q:\n%s", why, ExitError, want, r)
		}
		if after := kernel(); after != before {
			t.Fatalf("%s: the kernel changed:\nbefore:\n%s\nafter:\n%s", why, before, after)
		}
	}
}

// sysctl reads (value "") or writes a sysctl in the node namespace.
func (n *e2eNode) sysctl(name, value string) string {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(n.t.Context(), cmdTimeout)
	defer cancel()
	args := []string{"-n", name}
	if value != "" {
		args = []string{"-w", name + "=" + value}
	}
	out, err := n.lab.Node().Run(ctx, "sysctl", args...)
	if err != nil {
		n.t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func loadPlan(t *testing.T, path string) *savedplan.Plan {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := savedplan.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// storePlan writes p to name in the node's directory with mode perm.
func storePlan(t *testing.T, n *e2eNode, name string, p *savedplan.Plan, perm os.FileMode) string {
	t.Helper()
	var b bytes.Buffer
	if err := p.Encode(&b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(n.dir, name)
	if err := os.WriteFile(path, b.Bytes(), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil { // past the umask
		t.Fatal(err)
	}
	return path
}

// cutLines drops the change lines that mention one of marks.
func cutLines(t *testing.T, text string, marks ...string) string {
	t.Helper()
	var b strings.Builder
	for line := range strings.Lines(text) {
		drop := false
		for _, m := range marks {
			drop = drop || strings.Contains(line, m)
		}
		if !drop {
			b.WriteString(line)
		}
	}
	if b.String() == text {
		t.Fatalf("no line mentions %v", marks)
	}
	return b.String()
}
