package conformance

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

// Rendered is what the tool renders for a scenario, both families.
type Rendered struct {
	IPTables []*ipt.Ruleset
	NFTables []*nft.Ruleset
}

// Render builds the node-local tables from snap (the objects as the API
// server returned them) and renders both modes for both families, as
// `kubectl svcproxy apply` does by default (--family=all); nfacct says
// whether the node's kernel has nfacct, which the tool detects on a node
// as kube-proxy does (see Scenario.RenderConfig).
func Render(s *Scenario, snap *cluster.Snapshot, nfacct bool) (*Rendered, error) {
	tables, _, err := cluster.Build(snap, s.ClusterConfig())
	if err != nil {
		return nil, err
	}
	cfg := s.RenderConfig(nfacct)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Rendered{}
	for _, f := range families {
		r.IPTables = append(r.IPTables, render.IPTables(tables.ForFamily(f), cfg))
		r.NFTables = append(r.NFTables, render.NFTables(tables.ForFamily(f), cfg))
	}
	return r, nil
}

// Load writes the mode's rendered rules into ns.
func (r *Rendered) Load(ctx context.Context, ns netlab.NS, mode Mode) error {
	if mode == NFTables {
		return LoadNFTables(ctx, ns, r.NFTables)
	}
	return LoadIPTables(ctx, ns, r.IPTables)
}

// PlanRun is one `kubectl svcproxy plan` run.
type PlanRun struct {
	Args   []string
	Code   int
	Output string // stdout and stderr
}

// ChangedLines are the lines of the plan's diff that add or remove
// something (not the ---/+++ headers).
func (p *PlanRun) ChangedLines() []string {
	var out []string
	for _, l := range strings.Split(p.Output, "\n") {
		if strings.HasPrefix(l, "+++") || strings.HasPrefix(l, "---") {
			continue
		}
		if strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-") {
			out = append(out, l)
		}
	}
	return out
}

// NotImplemented reports whether the binary refused the mode as not
// implemented yet (nftables plan is being wired).
func (p *PlanRun) NotImplemented() bool {
	return p.Code != 0 && p.Code != 1 && strings.Contains(p.Output, "not implemented")
}

// Plan runs `kubectl svcproxy plan -f snapshot --config kubeProxyConfig`
// inside ns, on the nf_tables iptables backend, with its dump cache in
// stateDir. It passes no flag that a user on kube-proxy's node would not:
// the same config file, and paths that keep the run hermetic.
func Plan(ctx context.Context, ns netlab.NS, bin, snapshot, kubeProxyConfig, stateDir string) *PlanRun {
	args := []string{"plan", "-f", snapshot, "--config=" + kubeProxyConfig, "--state-dir=" + stateDir}
	cmd := ns.Command(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(stateDir, "no-kubeconfig"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	run := &PlanRun{Args: args}
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		run.Code = exit.ExitCode()
	case err != nil:
		run.Code = -1
		out.WriteString(err.Error())
	}
	run.Output = out.String()
	return run
}

// fileExists reports whether path exists.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
