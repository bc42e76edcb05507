package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster/fromapi"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/toolbin"
)

// TestToolSeesLiveKubeProxy runs the real kube-proxy v1.37.2 in a node
// namespace, in iptables and nftables mode, and the tool's plan and apply
// in the same namespace with kube-proxy's config file, as an operator
// would on a node kube-proxy still manages. Both must see it by every
// signal (its process, its /healthz and its metrics); apply must refuse
// with exit 2, and apply --take-over go on. Once kube-proxy is stopped,
// the same plan must not mention it.
func TestToolSeesLiveKubeProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver, etcd and kube-proxy (-short)")
	}
	e := newEnv(t)
	s, snap := e.healthCheckScenario(t)
	ctx := context.Background()
	e.reload(t, snap)
	apiSnap, err := fromapi.Snapshot(ctx, e.cluster.Admin, s.Config.NodeName)
	if err != nil {
		t.Fatal(err)
	}
	snapFile := filepath.Join(t.TempDir(), "snapshot.yaml")
	if err := writeSnapshot(snapFile, apiSnap); err != nil {
		t.Fatal(err)
	}
	bin := toolbin.Path(t)
	for _, m := range Modes {
		t.Run(string(m), func(t *testing.T) {
			ns := node(t, s, snap)
			config, err := e.kubeProxyConfig(t, s, m, ns, false)
			if err != nil {
				t.Fatal(err)
			}
			kp, err := StartKubeProxy(ns, e.kubeProxy, config, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer kp.Stop()
			if _, err := kp.WaitSynced(ctx, firstSyncTimeout, 100*time.Millisecond); err != nil {
				t.Fatalf("%v\nkube-proxy's log:\n%s", err, kp.Tail(30))
			}
			signals := []string{
				fmt.Sprintf("process kube-proxy (pid %d)", kp.Pid()),
				"http://" + healthzAddr + "/healthz answers as kube-proxy",
				"http://" + metricsAddr + "/metrics answers as kube-proxy",
			}
			tool := toolRun{ns: ns, bin: bin, snap: snapFile, config: config, dir: t.TempDir()}
			tool.expect(t, "plan", nil, []int{0, 1}, signals...)
			tool.expect(t, "apply", nil, []int{2}, append(signals, "--take-over")...)
			tool.expect(t, "apply", []string{"--take-over"}, []int{0}, append(signals, "applying beside it")...)
			kp.Stop()
			if r := tool.run(t, "plan"); strings.Contains(r.output, "kube-proxy runs") {
				t.Errorf("plan after kube-proxy stopped still sees it:\n%s", r.output)
			}
		})
	}
}

// toolRun runs the tool's kernel commands in ns with kube-proxy's config
// file, hermetically (its own state dir, lock and no kubeconfig).
type toolRun struct {
	ns                     netlab.NS
	bin, snap, config, dir string
}

type toolResult struct {
	code   int
	output string // stdout and stderr
}

func (r toolRun) run(t *testing.T, sub string, extra ...string) toolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	args := []string{sub, "-f", r.snap, "--config=" + r.config, "--iptables-backend=nft", "--state-dir=" + filepath.Join(r.dir, "state")}
	if sub == "apply" {
		args = append(args, "--lock-file="+filepath.Join(r.dir, "lock"))
	}
	cmd := r.ns.Command(ctx, r.bin, append(args, extra...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(r.dir, "no-kubeconfig"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return toolResult{exit.ExitCode(), out.String()}
	case err != nil:
		t.Fatalf("%s: %v", sub, err)
	}
	return toolResult{0, out.String()}
}

// expect runs sub and fails unless it exits with one of codes and says
// each of want.
func (r toolRun) expect(t *testing.T, sub string, extra []string, codes []int, want ...string) {
	t.Helper()
	res := r.run(t, sub, extra...)
	ok := false
	for _, c := range codes {
		ok = ok || res.code == c
	}
	for _, w := range want {
		ok = ok && strings.Contains(res.output, w)
	}
	if !ok {
		t.Errorf("%s %s beside kube-proxy: exit %d, want one of %v and each of %q:\n%s", sub, strings.Join(extra, " "), res.code, codes, want, res.output)
	}
}
