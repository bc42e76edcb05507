package cli

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/lock"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftgen"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// kernelFlags are the options of the commands that read or change the
// kernel: plan, apply, reset and proxy. locking and ipvs, set by the
// command, select the flags it takes beyond the iptables backend and the
// state directory.
type kernelFlags struct {
	// locking: the command writes, under the run lock (--lock-file,
	// --lock-wait); lockWait holds the command's default.
	locking bool
	// ipvs: the command works in ipvs mode (--ipvs-exclude-cidrs,
	// --ipvs-strict-arp).
	ipvs bool

	backend  string
	lockFile string
	lockWait time.Duration
	stateDir string
	// ipvsExclude are kube-proxy's --ipvs-exclude-cidrs.
	ipvsExclude []string
	// ipvsStrictARP is kube-proxy's --ipvs-strict-arp.
	ipvsStrictARP bool
}

func (k *kernelFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&k.backend, "iptables-backend", "auto", "iptables backend: auto (detect as kube-proxy's image does), legacy or nft")
	fs.StringVar(&k.stateDir, "state-dir", "/run/kubectl-svcproxy", "where dumps of the nf_tables backend are cached, per network namespace (empty: no cache)")
	if k.ipvs {
		fs.StringSliceVar(&k.ipvsExclude, "ipvs-exclude-cidrs", nil, "ipvs mode: CIDRs whose IPVS virtual servers the tool never touches, as kube-proxy's flag")
		fs.BoolVar(&k.ipvsStrictARP, "ipvs-strict-arp", false, "ipvs mode: set arp_ignore=1 and arp_announce=2 so the node does not answer ARP for kube-ipvs0's addresses, as kube-proxy's flag")
	}
	if k.locking {
		fs.StringVar(&k.lockFile, "lock-file", lock.DefaultPath, "the lock file that keeps two runs from interleaving")
		fs.DurationVar(&k.lockWait, "lock-wait", k.lockWait, "how long to wait for another run to finish (0: fail at once)")
	}
}

// validate checks the flags the mode uses, before anything reads the
// kernel: nftables mode writes no iptables rules, and only ipvs mode has
// excluded CIDRs.
func (k *kernelFlags) validate(mode Mode) error {
	if mode != ModeNFTables {
		if _, err := applyipt.ParseBackend(k.backend); err != nil {
			return err
		}
	}
	if mode == ModeIPVS {
		if _, err := k.excludeCIDRs(); err != nil {
			return err
		}
	}
	return nil
}

// iptablesClient returns a client for the chosen or detected backend, for
// the chains own names.
func (k *kernelFlags) iptablesClient(ctx context.Context, own *ipt.Ownership) (*applyipt.Client, error) {
	b, err := applyipt.ParseBackend(k.backend)
	if err != nil {
		return nil, err
	}
	ex := applyipt.OSExec{}
	if b == "" {
		if b, err = applyipt.DetectBackend(ctx, ex); err != nil {
			return nil, err
		}
	}
	client := &applyipt.Client{Exec: ex, Backend: b, WaitSeconds: 5, Ownership: own}
	if k.stateDir != "" {
		// The cache is valid for one network namespace only.
		if cookie, err := nftgen.NetnsCookie(); err == nil {
			client.CacheDir = filepath.Join(k.stateDir, fmt.Sprintf("netns-%d", cookie))
			client.Generation = nftgen.Read
		}
	}
	return client, nil
}

// excludeCIDRs parses --ipvs-exclude-cidrs.
func (k *kernelFlags) excludeCIDRs() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range k.ipvsExclude {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("--ipvs-exclude-cidrs: %q is not a CIDR: %w", s, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
