package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/ctsysctl"
	applyipvs "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/ipvs"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nfacct"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
)

// procSys is where this network namespace's sysctls are read and written.
const procSys = "/proc/sys"

// readNodeSysctls fills in what kube-proxy reads from the node's sysctls
// at startup: with nf_conntrack_tcp_be_liberal set, it installs no rule that
// drops conntrack-INVALID packets. Only the commands that run on the node
// (ProxyFlags.onNode: plan, apply, proxy) call it; render stays a function
// of its inputs.
func readNodeSysctls(cfg *render.Config) {
	if v, err := os.ReadFile(procSys + "/net/netfilter/nf_conntrack_tcp_be_liberal"); err == nil && len(v) > 0 && v[0] != '0' {
		cfg.ConntrackTCPBeLiberal = true
	}
}

// wantedSysctls returns the sysctls the mode needs for d, as paths under
// /proc/sys with their values, as kube-proxy sets them:
// route_localnet in iptables mode when NodePorts answer on 127.0.0.1 (its
// nftables and ipvs modes serve none there), and the ipvs mode's own.
func wantedSysctls(d *desired, b kernelBackend) [][2]string {
	ipv4 := slices.Contains(d.families, nodetable.IPv4)
	switch d.mode {
	case ModeIPTables:
		// Only the IPv4 rules answer on 127.0.0.1: an IPv6-only run
		// wants no IPv4 sysctl, as kube-proxy's IPv6 proxier sets none.
		if ipv4 && render.LocalhostNodePorts(d.tables.IPv4, d.cfg) {
			return [][2]string{{"net/ipv4/conf/all/route_localnet", "1"}}
		}
	case ModeIPVS:
		if ib, ok := b.(*ipvsBackend); ok {
			return applyipvs.Sysctls(ib.strictARP)
		}
	}
	return nil
}

// planSysctls reads each wanted sysctl under root and returns those whose
// value differs: a plan shows them, and apply writes only them. A wanted
// absolute path is a file outside /proc/sys (the conntrack hash size), read
// and written where it is.
func planSysctls(root string, wanted [][2]string) (diff.SysctlChanges, error) {
	var out diff.SysctlChanges
	for _, kv := range wanted {
		s := diff.Sysctl{Name: diff.SysctlName(kv[0]), Wanted: diff.SysctlValue(kv[1])}
		cur, err := os.ReadFile(sysctlFile(root, kv[0]))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("read sysctl %s: %w", s.Name, err)
		}
		if s.Current = diff.SysctlValue(string(cur)); s.Current != s.Wanted {
			out = append(out, s)
		}
	}
	return out, nil
}

// sysctlFile is the file of a sysctl's path under root, or the absolute
// path of a file that is not a sysctl.
func sysctlFile(root, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(root, path)
}

// writeSysctls sets the sysctls of a plan under root, in order.
func writeSysctls(root string, changes diff.SysctlChanges) error {
	for _, s := range changes {
		if err := os.WriteFile(sysctlFile(root, s.Path()), []byte(s.Wanted), 0o644); err != nil {
			return fmt.Errorf("set sysctl %s = %s%s: %w", s.Name, s.Wanted, sysctlHint(s.Name, err), err)
		}
	}
	return nil
}

// sysctlHint says how to do without a sysctl that could not be set.
func sysctlHint(name string, err error) string {
	switch {
	case name == "net.ipv4.conf.all.route_localnet":
		return " (for localhost NodePorts; or pass --iptables-localhost-nodeports=false)"
	case name == ctsysctl.HashsizeFile && errors.Is(err, syscall.EROFS):
		return " (/sys is mounted read-only, so kube-proxy v1.37 fails here too; mount it read-write, or pass --conntrack-max-per-core=0 to leave the table size alone)"
	case strings.HasPrefix(name, "net.netfilter.nf_conntrack_") || name == ctsysctl.HashsizeFile:
		return " (for the --conntrack-* settings, as kube-proxy sets them)"
	}
	return ""
}

// dryRunSysctls prints what writeSysctls would write.
func dryRunSysctls(w io.Writer, changes diff.SysctlChanges) {
	for _, s := range changes {
		if filepath.IsAbs(s.Name) {
			fmt.Fprintf(w, "# write %s\n%s\n", s.Name, s.Wanted)
			continue
		}
		fmt.Fprintf(w, "# sysctl -w\n%s = %s\n", s.Name, s.Wanted)
	}
}

// planKernel plans d against the kernel with b, with the sysctls the mode
// needs and the conntrack settings of k that differ from what the node
// has; warn takes what the node cannot be given.
func planKernel(ctx context.Context, k *kernelFlags, b kernelBackend, d *desired, warn io.Writer) (kernelPlan, error) {
	p, err := b.plan(ctx, d)
	if err != nil {
		return nil, err
	}
	ct, err := k.conntrackSysctls(warn)
	if err != nil {
		return nil, err
	}
	s, err := planSysctls(procSys, append(wantedSysctls(d, b), ct...))
	if err != nil {
		return nil, err
	}
	p.setSysctls(s)
	return p, nil
}

// ensureNFAcct creates the nfacct counters that the rules about to be
// written name, in this process's network namespace, as kube-proxy does
// before every full sync; it never resets one that exists.
func ensureNFAcct(names []string) error {
	for _, name := range names {
		if err := nfacct.Ensure(name); err != nil {
			return fmt.Errorf("%w (on a kernel without nfacct, pass --nfacct=false: kube-proxy then leaves out the counting matches and the localhost NodePort rules)", err)
		}
	}
	return nil
}
