package cli

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/ctsysctl"
)

// conntrackGroup is the title of kube-proxy's conntrack flags in --help.
const conntrackGroup = "Conntrack Flags (as kube-proxy's)"

// addConntrackFlags registers kube-proxy v1.37's conntrack flags, with its
// names, defaults and meaning (cmd/kube-proxy/app/options.go); for the
// userspace proxy, only the four that v1.25 had.
func (k *kernelFlags) addConntrackFlags(fs *pflag.FlagSet) {
	k.ct = ctsysctl.Default()
	capped := " (at most 1048576)"
	if k.conntrackV125 {
		capped = "" // v1.25 had no cap
	}
	fs.Int32Var(&k.ct.MaxPerCore, "conntrack-max-per-core", k.ct.MaxPerCore, "table entries per CPU: nf_conntrack_max is raised to this times the CPUs"+capped+" or to --conntrack-min, whichever is more, and never lowered; 0 leaves the table size alone")
	fs.Int32Var(&k.ct.Min, "conntrack-min", k.ct.Min, "table entries at least, whatever the CPUs")
	fs.DurationVar(&k.ct.TCPEstablishedTimeout, "conntrack-tcp-timeout-established", k.ct.TCPEstablishedTimeout, "the idle `time` of established TCP flows (0 leaves the kernel's)")
	fs.DurationVar(&k.ct.TCPCloseWaitTimeout, "conntrack-tcp-timeout-close-wait", k.ct.TCPCloseWaitTimeout, "the `time` TCP flows stay in CLOSE_WAIT (0 leaves the kernel's)")
	if k.conntrackV125 {
		return
	}
	fs.BoolVar(&k.ct.TCPBeLiberal, "conntrack-tcp-be-liberal", k.ct.TCPBeLiberal, "set the conntrack TCP be_liberal sysctl to 1; then no rule drops conntrack-INVALID packets")
	fs.DurationVar(&k.ct.UDPTimeout, "conntrack-udp-timeout", k.ct.UDPTimeout, "the idle `time` of unreplied UDP flows (0 leaves the kernel's)")
	fs.DurationVar(&k.ct.UDPStreamTimeout, "conntrack-udp-timeout-stream", k.ct.UDPStreamTimeout, "the idle `time` of assured UDP flows (0 leaves the kernel's)")
}

// conntrackSysctls returns the conntrack settings kube-proxy would write on
// this node, as wantedSysctls' pairs; the hash size is named by its /sys
// path. What this network namespace cannot set is said once on warn.
func (k *kernelFlags) conntrackSysctls(warn io.Writer) ([][2]string, error) {
	if !k.conntrack {
		return nil, nil
	}
	wanted := ctsysctl.Node{Root: "/"}.Wanted
	if k.conntrackV125 {
		wanted = ctsysctl.Node{Root: "/"}.WantedV125
	}
	set, msg, err := wanted(k.ct)
	if err != nil {
		return nil, fmt.Errorf("conntrack settings: %w", err)
	}
	if msg != "" {
		k.ctWarned.Do(func() { fmt.Fprintf(warn, "warning: %s\n", msg) })
	}
	out := make([][2]string, 0, len(set))
	for _, s := range set {
		out = append(out, [2]string{s.Path, s.Value})
	}
	return out, nil
}

// validateConntrack refuses a negative setting, as kube-proxy does. In
// userspace mode, which follows kube-proxy v1.25, the settings are
// v1.25's, and one that v1.25 did not have is refused unless it is off.
func (k *kernelFlags) validateConntrack(p *ProxyFlags) error {
	if !k.conntrack {
		return nil
	}
	if flag := k.ct.NegativeFlag(); flag != "" {
		return fmt.Errorf("%s: must be greater than or equal to 0", p.describe(flag))
	}
	if p.settings.mode != ModeUserspace {
		return nil
	}
	k.conntrackV125 = true
	for _, s := range []struct {
		flag string
		set  bool
	}{
		{"conntrack-tcp-be-liberal", k.ct.TCPBeLiberal},
		{"conntrack-udp-timeout", k.ct.UDPTimeout != 0},
		{"conntrack-udp-timeout-stream", k.ct.UDPStreamTimeout != 0},
	} {
		if s.set {
			return fmt.Errorf("%s: not in userspace mode, which sets the conntrack settings as kube-proxy v1.25, which had no such setting", p.describe(s.flag))
		}
	}
	return nil
}

// liberalRender renders as with nf_conntrack_tcp_be_liberal set when
// --conntrack-tcp-be-liberal is given: kube-proxy sets the sysctl before
// it builds its proxier, which then reads it and installs no rule that
// drops conntrack-INVALID packets.
func (k *kernelFlags) liberalRender(p *ProxyFlags) {
	if k.conntrack && k.ct.TCPBeLiberal && p.settings.onNode {
		p.settings.cfg.ConntrackTCPBeLiberal = true
	}
}

// setConntrack sets the conntrack sysctls once, before the proxy starts,
// as kube-proxy v1.25 did; a write that fails stops it, as it stopped
// v1.25.
func (o *ProxyOptions) setConntrack() error {
	wanted, err := o.kernel.conntrackSysctls(o.streams.ErrOut)
	if err != nil {
		return err
	}
	changes, err := planSysctls(procSys, wanted)
	if err != nil {
		return err
	}
	for _, c := range changes {
		o.log.Info("Set sysctl", "name", c.Name, "from", c.Current, "to", c.Wanted)
	}
	return writeSysctls(procSys, changes)
}
