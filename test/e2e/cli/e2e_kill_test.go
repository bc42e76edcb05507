package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// The kill test interrupts a large one-shot apply at many points, with
// SIGTERM and with SIGKILL, and checks after each that the kernel holds
// either the old or the new rules in both tables, never one of each.

const killServices = 1000 // enough for an apply to take a second or two

// killState is 0 (snapshot A) or 1 (snapshot B).
type killState int

// killLab is a lab node with the two snapshots and their renders.
type killLab struct {
	n     *e2eNode
	files [2]string
	want  [2]*ipt.Ruleset
	state killState // what the kernel holds now
}

// killPoint is when to send the signal: delay after the start, or, with
// inRestore, delay after the first restore process appears.
type killPoint struct {
	inRestore bool
	delay     time.Duration
}

func (p killPoint) String() string {
	if p.inRestore {
		return fmt.Sprintf("%v into the restore", p.delay.Round(time.Millisecond))
	}
	return fmt.Sprintf("%v after the start", p.delay.Round(time.Millisecond))
}

func TestE2EKillDuringApply(t *testing.T) {
	t.Parallel()
	for _, b := range e2eBackends {
		t.Run(b, func(t *testing.T) {
			t.Parallel()
			requireOrFailInCI(t, b)
			k := newKillLab(t, newE2ENode(t, b))
			start := time.Now()
			points := k.uninterrupted(t)
			for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
				k.sweep(t, sig, points)
			}
			t.Logf("%d kill points in %v", 2*len(points), time.Since(start).Round(time.Millisecond))
		})
	}
}

// requireOrFailInCI skips the test where it cannot run, except under CI,
// where a missing prerequisite is a failure.
func requireOrFailInCI(t *testing.T, backend string) {
	t.Helper()
	missing := ""
	if os.Geteuid() != 0 {
		missing = "root (to create network namespaces)"
	}
	for _, tool := range []string{"ip", "iptables-" + backend, "iptables-" + backend + "-save", "iptables-" + backend + "-restore"} {
		if _, err := exec.LookPath(tool); err != nil && missing == "" {
			missing = tool
		}
	}
	switch {
	case missing == "":
	case os.Getenv("CI") != "":
		t.Fatalf("e2e kill test: %s missing; under CI it must run (hack/install-deps.sh installs the tools)", missing)
	default:
		t.Skipf("e2e kill test: %s missing", missing)
	}
	if os.Getenv("CI") != "" {
		t.Cleanup(func() {
			if t.Skipped() {
				t.Error("e2e kill test skipped; under CI it must run")
			}
		})
	}
}

func newKillLab(t *testing.T, n *e2eNode) *killLab {
	k := &killLab{n: n}
	for i := range k.files {
		k.files[i] = filepath.Join(n.dir, fmt.Sprintf("snapshot-%c.yaml", 'a'+i))
		if err := os.WriteFile(k.files[i], []byte(killSnapshot(killServices, i)), 0o644); err != nil {
			t.Fatal(err)
		}
		out, stderr, code := run(t, "", append([]string{"render"}, k.args(killState(i))...)...)
		sets, err := ipt.ParseAll([]byte(out))
		if code != 0 || err != nil || len(sets) != 1 {
			t.Fatalf("render %s: exit %d, %v: %s", k.files[i], code, err, stderr)
		}
		k.want[i] = sets[0]
	}
	return k
}

func (k *killLab) args(s killState) []string {
	return []string{"-f", k.files[s], "--node-name=node1", "--cluster-cidr=10.244.0.0/16", "--family=ipv4"}
}

// uninterrupted applies A, then B, checks each, and returns the kill
// points: two before the restore (at once, and half way to it) and four
// spread over the time the restores ran.
func (k *killLab) uninterrupted(t *testing.T) []killPoint {
	expect(t, k.n.run("apply", k.args(0)...), ExitOK, "Applied")
	k.expectState(t, 0)
	a := k.start(t, 1)
	first := a.waitRestore(t)
	last := a.lastRestore(t)
	expect(t, a.finish(t), ExitOK, "Applied")
	k.expectState(t, 1)
	t.Logf("uninterrupted apply of a change to %d Services: restores from %v to %v", killServices, first.Round(time.Millisecond), last.Round(time.Millisecond))
	points := []killPoint{{delay: 0}, {delay: first / 2}}
	for i := range 4 {
		points = append(points, killPoint{inRestore: true, delay: (last - first) * time.Duration(i) / 3})
	}
	return points
}

// sweep kills an apply towards the other snapshot at each point.
func (k *killLab) sweep(t *testing.T, sig syscall.Signal, points []killPoint) {
	var counts [2]int
	restoring := 0
	for _, p := range points {
		to := 1 - k.state
		r, inRestore := k.killedApply(t, to, p, sig)
		got := k.observe(t, r)
		counts[got]++
		if inRestore {
			restoring++
		}
		checkExit(t, sig, r, got == to)
		t.Logf("%v %v (restore running: %v): exit %d, kernel %s", sig, p, inRestore, r.code, map[bool]string{true: "new", false: "old"}[got == to])
	}
	t.Logf("%v: %d kill points, %d during a restore; the kernel held A %d times, B %d times, never a mix",
		sig, len(points), restoring, counts[0], counts[1])
}

// killedApply runs an apply of snapshot to, sends sig at p, and waits for
// it and for any restore it left running. inRestore says whether a
// restore was running when the signal was sent.
func (k *killLab) killedApply(t *testing.T, to killState, p killPoint, sig syscall.Signal) (r result, inRestore bool) {
	a := k.start(t, to)
	if p.inRestore {
		a.waitRestore(t)
	}
	time.Sleep(p.delay)
	inRestore = len(k.restores(t)) > 0
	a.cmd.Process.Signal(sig) // fails only if it already exited, which counts too
	r = a.finish(t)
	k.waitOrphans(t)
	return r, inRestore
}

// runningApply is the binary applying in the background.
type runningApply struct {
	k      *killLab
	cmd    *exec.Cmd
	out    bytes.Buffer
	errOut bytes.Buffer
	began  time.Time
	done   chan struct{}
}

func (k *killLab) start(t *testing.T, to killState) *runningApply {
	a := &runningApply{k: k, done: make(chan struct{})}
	a.cmd = k.n.command(t.Context(), nil, "apply", k.args(to)...)
	a.cmd.Stdout, a.cmd.Stderr = &a.out, &a.errOut
	a.began = time.Now()
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { a.cmd.Wait(); close(a.done) }()
	return a
}

// waitRestore waits until a restore runs in the namespace, or the apply
// ends, and returns the time since the start.
func (a *runningApply) waitRestore(t *testing.T) time.Duration {
	for len(a.k.restores(t)) == 0 {
		select {
		case <-a.done:
			return time.Since(a.began)
		case <-time.After(2 * time.Millisecond):
		}
		if time.Since(a.began) > cmdTimeout {
			t.Fatal("no restore within", cmdTimeout)
		}
	}
	return time.Since(a.began)
}

// lastRestore waits for the apply to end and returns when a restore was
// last seen running, as time since the start.
func (a *runningApply) lastRestore(t *testing.T) time.Duration {
	var last time.Duration
	for {
		if len(a.k.restores(t)) > 0 {
			last = time.Since(a.began)
		}
		select {
		case <-a.done:
			return last
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func (a *runningApply) finish(t *testing.T) result {
	select {
	case <-a.done:
	case <-time.After(cmdTimeout):
		a.cmd.Process.Kill()
		<-a.done
		t.Errorf("apply still running after %v", cmdTimeout)
	}
	return result{args: a.cmd.Args, took: time.Since(a.began), stdout: a.out.String(), stderr: a.errOut.String(), code: a.cmd.ProcessState.ExitCode()}
}

// observe reads both tables and returns which snapshot they hold; it fails
// the test if they hold neither, or one table of each.
func (k *killLab) observe(t *testing.T, r result) killState {
	t.Helper()
	filter, nat := k.tablesState()
	if filter < 0 || filter != nat {
		t.Fatalf("half applied: filter holds %s, nat holds %s\n%s", stateName(filter), stateName(nat), r)
	}
	k.state = killState(filter)
	return k.state
}

func (k *killLab) expectState(t *testing.T, want killState) {
	t.Helper()
	if filter, nat := k.tablesState(); filter != int(want) || nat != int(want) {
		t.Fatalf("after an uninterrupted apply of %c: filter holds %s, nat holds %s", 'A'+want, stateName(filter), stateName(nat))
	}
	k.state = want
}

// tablesState returns which snapshot's render each table's owned chains
// equal: 0 (A), 1 (B) or -1 (neither).
func (k *killLab) tablesState() (filter, nat int) {
	live, err := ipt.Parse([]byte(k.n.save("filter", "nat")), nodetable.IPv4)
	if err != nil {
		k.n.t.Fatal(err)
	}
	filter, nat = -1, -1
	for i, want := range k.want {
		differ := map[ipt.TableName]bool{}
		for _, c := range diff.IPTables(want, live, render.IPTablesOwnership()).Changes {
			differ[c.Table] = true
		}
		if !differ[ipt.Filter] {
			filter = i
		}
		if !differ[ipt.NAT] {
			nat = i
		}
	}
	return filter, nat
}

func stateName(s int) string {
	if s < 0 {
		return "neither snapshot"
	}
	return string(rune('A' + s))
}

// checkExit checks what an apply stopped by sig said against what the
// kernel holds. After SIGTERM: exit 0 and "Applied" if the kernel is new;
// if it is old, exit 2 saying that nothing was changed, or death by the
// signal when it came before the handler was installed.
func checkExit(t *testing.T, sig syscall.Signal, r result, isNew bool) {
	t.Helper()
	switch {
	case isNew && r.code == ExitOK && strings.Contains(r.stdout, "Applied"):
	case isNew && sig == syscall.SIGKILL && r.code == -1:
	case !isNew && r.code == -1:
	case !isNew && sig == syscall.SIGTERM && r.code == ExitError &&
		strings.Contains(r.stderr, "interrupted by SIGTERM before writing anything: nothing was changed"):
	default:
		t.Fatalf("after %v the kernel is %s, but the apply said:\n%s", sig, map[bool]string{true: "new", false: "old"}[isNew], r)
	}
}

// restores returns the PIDs of the iptables restores running in the lab
// node's network namespace.
func (k *killLab) restores(t *testing.T) []string {
	var ns syscall.Stat_t
	if err := syscall.Stat(filepath.Join("/run/netns", k.n.lab.Node().Name()), &ns); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("net:[%d]", ns.Ino)
	entries, _ := os.ReadDir("/proc")
	var pids []string
	for _, e := range entries {
		link, err := os.Readlink(filepath.Join("/proc", e.Name(), "ns", "net"))
		if err != nil || link != want {
			continue
		}
		argv, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if name, _, _ := bytes.Cut(argv, []byte{0}); bytes.HasSuffix(name, []byte("-restore")) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// waitOrphans waits until no restore runs in the node namespace: one that
// a killed apply started goes on to the end of its input.
func (k *killLab) waitOrphans(t *testing.T) {
	for deadline := time.Now().Add(cmdTimeout); ; time.Sleep(20 * time.Millisecond) {
		pids := k.restores(t)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("restores %v still running after %v", pids, cmdTimeout)
		}
	}
}

// killSnapshot is n ClusterIP Services with two endpoints each (which no
// pod serves: only the rules matter). Variant 1 moves every endpoint and
// leaves every tenth Service without any, so that going from one variant
// to the other changes both tables: nat's endpoint chains, and filter's
// REJECT rules for Services without endpoints.
func killSnapshot(n, variant int) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Node\nmetadata: {name: node1}\nspec: {podCIDRs: [10.244.0.0/24]}\n" +
		"status: {addresses: [{type: InternalIP, address: 192.168.77.10}]}\n")
	for i := range n {
		ip := fmt.Sprintf("10.96.%d.%d", 10+i/250, i%250+1)
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Service\nmetadata: {name: s%d, namespace: default}\n"+
			"spec: {clusterIP: %s, clusterIPs: [%s], ports: [{name: p, port: 80, targetPort: 8080, protocol: TCP}]}\n", i, ip, ip)
		if variant == 1 && i%10 == 0 {
			continue
		}
		fmt.Fprintf(&b, "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\n"+
			"metadata: {name: s%d-1, namespace: default, labels: {kubernetes.io/service-name: s%d}}\n"+
			"addressType: IPv4\nports: [{name: p, port: 8080, protocol: TCP}]\nendpoints:\n", i, i)
		for j := range 2 {
			fmt.Fprintf(&b, "- {addresses: [10.%d.%d.%d], conditions: {ready: true}, nodeName: node2}\n", 245+2*variant+j, i/250, i%250+1)
		}
	}
	return b.String()
}
