package cli

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/example"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// planSummaryRE is the last line of a plan with changes on an empty node:
// everything is new, nothing changed or removed, and kube-proxy's default
// TCP established and CLOSE_WAIT conntrack timeouts to set.
var planSummaryRE = regexp.MustCompile(`(?m)^Plan: chains \+([1-9][0-9]*) ~0 -0, rules \+([1-9][0-9]*) -0, sysctls ~2$`)

func TestE2EPlanApplyExitCodes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, n *e2eNode) {
		r := expect(t, n.run("plan", exampleArgs...), ExitChanges,
			"--- live IPv4 (iptables-"+n.backend+")", "+++ desired IPv4", "@@ nat KUBE-SERVICES: new chain @@", "+-A KUBE-SVC-")
		m := planSummaryRE.FindStringSubmatch(r.stdout)
		if m == nil {
			t.Fatalf("no %q summary:\n%s", planSummaryRE, r)
		}

		r = expect(t, n.run("plan", append(exampleArgs, "-o", "json")...), ExitChanges)
		var report struct {
			Kind    string        `json:"kind"`
			Mode    string        `json:"mode"`
			Backend string        `json:"backend"`
			Summary *diff.Summary `json:"summary"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &report); err != nil {
			t.Fatalf("plan -o json: %v\n%s", err, r)
		}
		if strings.Contains(r.stdout, "null") || report.Kind != "Plan" || report.Mode != "iptables" {
			t.Errorf("plan -o json: kind %q, mode %q, or a null:\n%s", report.Kind, report.Mode, r.stdout)
		}
		if report.Backend != "iptables-"+n.backend || report.Summary == nil ||
			fmt.Sprint(report.Summary.ChainsAdded) != m[1] || fmt.Sprint(report.Summary.RulesAdded) != m[2] {
			t.Fatalf("plan -o json: backend %q, summary %+v; the text plan said chains +%s, rules +%s",
				report.Backend, report.Summary, m[1], m[2])
		}

		want := fmt.Sprintf("Applied (iptables-%s): chains +%s ~0 -0, rules +%s -0", n.backend, m[1], m[2])
		expect(t, n.run("apply", exampleArgs...), ExitOK, want)
		before := n.save()
		expect(t, n.run("apply", exampleArgs...), ExitOK, "Applied (iptables-"+n.backend+"): chains +0 ~0 -0, rules +0 -0")
		if after := n.save(); after != before {
			t.Fatalf("a second apply changed the kernel:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		r = expect(t, n.run("plan", exampleArgs...), ExitOK, "No changes")
		if strings.Contains(r.stdout, "@@") {
			t.Fatalf("plan without changes prints a diff:\n%s", r)
		}
	})
}

func TestE2EDriftIsRepaired(t *testing.T) {
	forEachBackend(t, func(t *testing.T, n *e2eNode) {
		expect(t, n.run("apply", exampleArgs...), ExitOK)
		// Delete web's first endpoint jump by hand.
		chain := ""
		for line := range strings.Lines(n.save("nat")) {
			if strings.HasPrefix(line, "-A KUBE-SVC-") && strings.Contains(line, "default/web:http") {
				chain = strings.Fields(line)[1]
				break
			}
		}
		if chain == "" {
			t.Fatalf("no KUBE-SVC- chain of default/web after apply:\n%s", n.save("nat"))
		}
		n.ipt("-t", "nat", "-D", chain, "1")

		expect(t, n.run("plan", exampleArgs...), ExitChanges,
			"@@ nat "+chain+": changed @@", "+-A "+chain+" ", "Plan: chains +0 ~1 -0, rules +1 -0")
		expect(t, n.run("apply", exampleArgs...), ExitOK, "chains +0 ~1 -0, rules +1 -0")
		expect(t, n.run("plan", exampleArgs...), ExitOK, "No changes")

		// A stray rule in an owned chain, and the entry jump gone.
		n.ipt("-t", "nat", "-A", "KUBE-SERVICES", "-s", "192.0.2.9/32", "-j", "ACCEPT")
		n.ipt("-t", "nat", "-D", "PREROUTING", "1")
		expect(t, n.run("plan", exampleArgs...), ExitChanges, "@@ nat KUBE-SERVICES: changed @@",
			"--A KUBE-SERVICES -s 192.0.2.9/32 -j ACCEPT\n", "@@ nat PREROUTING: missing jump @@\n+-A PREROUTING ",
			"Plan: chains +0 ~1 -0, rules +1 -1")
		expect(t, n.run("apply", exampleArgs...), ExitOK, "chains +0 ~1 -0, rules +1 -1")
		expect(t, n.run("plan", exampleArgs...), ExitOK, "No changes")
	})
}

func TestE2EDryRunChangesNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, n *e2eNode) {
		before := n.save()
		r := expect(t, n.run("apply", append(exampleArgs, "--dry-run")...), ExitOK,
			"iptables-"+n.backend+"-restore --noflush", "*nat\n", ":KUBE-SERVICES - [0:0]\n", "COMMIT\n")
		if strings.Contains(r.stdout, "Applied") {
			t.Fatalf("--dry-run says it applied:\n%s", r)
		}
		if after := n.save(); after != before {
			t.Fatalf("apply --dry-run changed the kernel:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		expect(t, n.run("plan", exampleArgs...), ExitChanges)
	})
}

func TestE2EResetKeepsForeignRules(t *testing.T) {
	const foreign = "-A PREROUTING -s 192.0.2.7/32 -j ACCEPT\n"
	forEachBackend(t, func(t *testing.T, n *e2eNode) {
		n.ipt("-t", "nat", "-A", "PREROUTING", "-s", "192.0.2.7/32", "-j", "ACCEPT")
		natBefore := n.save("nat")
		if !strings.Contains(natBefore, foreign) {
			t.Fatalf("the foreign rule reads back differently:\n%s", natBefore)
		}
		expect(t, n.run("apply", exampleArgs...), ExitOK)
		if !ownedChainRE.MatchString(n.save()) {
			t.Fatalf("apply made no KUBE-SVC-/KUBE-SEP- chains:\n%s", n.save())
		}

		expect(t, n.run("reset", "--family=ipv4"), ExitOK, "Reset (iptables-"+n.backend+"): chains +0 ~0 -")
		if nat := n.save("nat"); nat != natBefore {
			t.Fatalf("reset did not restore the nat table to its state before apply:\nbefore:\n%s\nafter:\n%s", natBefore, nat)
		}
		// Only kubelet's KUBE-FIREWALL, which kube-proxy shares, may stay.
		for line := range strings.Lines(n.save()) {
			if strings.HasPrefix(line, ":KUBE-") && !strings.HasPrefix(line, ":KUBE-FIREWALL ") {
				t.Errorf("reset left chain %s", strings.TrimSpace(line))
			}
		}
		expect(t, n.run("plan", exampleArgs...), ExitChanges)
	})
}

func TestE2EErrorsLeaveKernelUnchanged(t *testing.T) {
	forEachBackend(t, func(t *testing.T, n *e2eNode) {
		bad := filepath.Join(n.dir, "bad.yaml")
		err := os.WriteFile(bad, []byte("apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: default}\nspec:\n  ports:\n  - port: eighty\n"), 0o644)
		if err != nil {
			t.Fatal(err)
		}
		// A foreign rule, so that the kernel is not trivially empty.
		n.ipt("-t", "nat", "-A", "PREROUTING", "-s", "192.0.2.7/32", "-j", "ACCEPT")
		cases := []struct {
			name string
			env  []string
			args []string
			want []string // on stderr
		}{
			{"malformed snapshot", nil,
				[]string{"-f", bad, "--node-name=node1", "--family=ipv4"}, []string{"bad.yaml"}},
			{"unreachable API server", nil,
				[]string{"--server=https://127.0.0.1:1", "--request-timeout=2s", "--node-name=node1", "--family=ipv4"},
				[]string{"127.0.0.1:1"}},
			{"missing iptables", []string{"PATH=/nonexistent"}, exampleArgs,
				[]string{"iptables-" + n.backend + "-save", "not found"}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				before := n.save()
				for _, sub := range []string{"plan", "apply"} {
					r := n.runEnv(tc.env, sub, tc.args...)
					t.Logf("%s: exit %d: %s", sub, r.code, r.stderr)
					if r.code != ExitError {
						t.Fatalf("%s: want exit %d:\n%s", sub, ExitError, r)
					}
					for _, w := range tc.want {
						if !strings.Contains(r.stderr, w) {
							t.Errorf("%s: stderr lacks %q:\n%s", sub, w, r)
						}
					}
					if !strings.HasPrefix(r.stderr, "error: ") || strings.Count(r.stderr, "\n") != 1 {
						t.Errorf("%s: stderr is not one \"error: ...\" line:\n%s", sub, r)
					}
				}
				if after := n.save(); after != before {
					t.Fatalf("the kernel changed:\nbefore:\n%s\nafter:\n%s", before, after)
				}
			})
		}
	})
}

func TestE2ELock(t *testing.T) {
	forEachBackend(t, func(t *testing.T, n *e2eNode) {
		f, err := os.OpenFile(n.lockFile(), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			t.Fatal(err)
		}
		holder := fmt.Sprintf("pid %d ", os.Getpid())
		if _, err := f.WriteString(holder[4:] + "\n"); err != nil {
			t.Fatal(err)
		}
		before := n.save()
		r := n.run("apply", exampleArgs...)
		if r.code != ExitError || !strings.Contains(r.stderr, n.lockFile()) || !strings.Contains(r.stderr, holder) {
			t.Fatalf("apply with the lock held: want exit %d naming %s and its holder's %s:\n%s", ExitError, n.lockFile(), holder, r)
		}
		if r.took > 3*time.Second {
			t.Errorf("apply with the lock held took %v to fail; want at once", r.took)
		}
		if after := n.save(); after != before {
			t.Fatalf("apply without the lock changed the kernel:\nbefore:\n%s\nafter:\n%s", before, after)
		}

		done := make(chan result, 1)
		go func() { done <- n.run("apply", append(exampleArgs, "--lock-wait=3s")...) }()
		time.Sleep(500 * time.Millisecond)
		select {
		case r := <-done:
			t.Fatalf("apply --lock-wait=3s finished while the lock was held:\n%s", r)
		default:
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_UN); err != nil {
			t.Fatal(err)
		}
		expect(t, <-done, ExitOK, "Applied")
		expect(t, n.run("plan", exampleArgs...), ExitOK)
	})
}

// webPods are pods for the example's web endpoints, by IP.
var webPods = map[string]string{"10.244.0.11": "web-11", "10.244.0.12": "web-12", "10.244.1.13": "web-13"}

// webClusterIP is the example's web Service.
var webClusterIP = netip.MustParseAddrPort("10.96.0.10:80")

func TestE2ETrafficFollowsApply(t *testing.T) {
	forEachBackend(t, func(t *testing.T, n *e2eNode) {
		for ip, name := range webPods {
			if err := n.lab.AddPod(name, netip.MustParseAddr(ip)).ServeTCP(8080); err != nil {
				t.Fatal(err)
			}
		}
		expect(t, n.run("apply", exampleArgs...), ExitOK)
		assertSpread(t, n, "web-11", "web-12", "web-13")

		// The same cluster with web's endpoint 10.244.0.12 gone.
		data := example.Snapshot
		const gone = "- addresses: [10.244.0.12]\n  conditions: {ready: true, serving: true, terminating: false}\n  nodeName: node1\n"
		if strings.Count(string(data), gone) != 1 {
			t.Fatalf("internal/example/snapshot.yaml no longer lists web's endpoint 10.244.0.12 as this test expects")
		}
		path := filepath.Join(n.dir, "two-endpoints.yaml")
		if err := os.WriteFile(path, []byte(strings.Replace(string(data), gone, "", 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		snapArgs := []string{"-f", path, "--node-name=node1", "--cluster-cidr=10.244.0.0/16", "--family=ipv4"}
		expect(t, n.run("apply", snapArgs...), ExitOK, "chains +0 ~1 -1")
		assertSpread(t, n, "web-11", "web-13")
		expect(t, n.run("plan", snapArgs...), ExitOK)
	})
}

// assertSpread checks that new connections from the external client to
// web's ClusterIP reach exactly the backends want.
func assertSpread(t *testing.T, n *e2eNode, want ...string) {
	t.Helper()
	got, err := n.lab.Client().Spread(t.Context(), netlab.TCP, webClusterIP, 30)
	if err != nil {
		t.Fatalf("%s: %v (replies so far %v)", webClusterIP, err, got)
	}
	if names := sortedKeys(got); !slices.Equal(names, want) {
		t.Fatalf("%s reached %v, want exactly %v", webClusterIP, got, want)
	}
}

// TestE2ELiberalConntrack follows kube-proxy on a node whose
// nf_conntrack_tcp_be_liberal sysctl is set: no rule drops INVALID packets.
func TestE2ELiberalConntrack(t *testing.T) {
	forEachBackend(t, func(t *testing.T, n *e2eNode) {
		if _, err := n.lab.Node().Run(t.Context(), "sysctl", "-w", "net.netfilter.nf_conntrack_tcp_be_liberal=1"); err != nil {
			testenv.SkipOrFail(t, fmt.Sprintf("cannot set nf_conntrack_tcp_be_liberal in the namespace: %v", err))
		}
		expect(t, n.run("apply", exampleArgs...), ExitOK)
		if save := n.save(); strings.Contains(save, "--ctstate INVALID") {
			t.Fatalf("with nf_conntrack_tcp_be_liberal=1 the INVALID drop rule must be absent:\n%s", save)
		}
		// render is a function of its inputs: it does not read the node's sysctls.
		if out, _, _ := run(t, "", append([]string{"render"}, exampleArgs...)...); !strings.Contains(out, "--ctstate INVALID -m nfacct --nfacct-name  ct_state_invalid_dropped_pkts -j DROP") {
			t.Errorf("render should keep kube-proxy's default INVALID drop rule")
		}
	})
}
