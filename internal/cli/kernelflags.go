package cli

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/ctsysctl"
	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptablesnft"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/lock"
	applynft "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftgen"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/statefile"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// kernelFlags are the options of the commands that read or change the
// kernel: plan, apply, reset and proxy. locking, lockFlags and ipvs, set
// by the command, select the flags it takes beyond the iptables backend
// and the state directory.
type kernelFlags struct {
	// locking: the command writes, under the run lock (--lock-file,
	// --lock-wait); lockWait holds the command's default.
	locking bool
	// lockFlags: the command takes no lock but accepts the lock flags
	// (plan), so that one set of flags serves it and apply.
	lockFlags bool
	// ipvs: the command works in ipvs mode (--ipvs-exclude-cidrs,
	// --ipvs-strict-arp).
	ipvs bool
	// conntrack: the command sets the conntrack sysctls (plan, apply,
	// proxy): kube-proxy's --conntrack-* flags; conntrackV125 (proxy):
	// as kube-proxy v1.25, whose userspace mode it runs.
	conntrack     bool
	conntrackV125 bool

	backend  string
	lockFile string
	lockWait time.Duration
	stateDir string
	// ipvsExclude are kube-proxy's --ipvs-exclude-cidrs.
	ipvsExclude []string
	// ipvsStrictARP is kube-proxy's --ipvs-strict-arp.
	ipvsStrictARP bool
	// ct are kube-proxy's conntrack settings (--conntrack-*).
	ct ctsysctl.Config
	// ctWarned keeps apply --watch from repeating the warning about
	// conntrack sysctls this network namespace cannot set.
	ctWarned sync.Once

	// cacheDirs are the cache directories opened so far, by their path
	// under --state-dir: proxy builds a client on every reload.
	cacheMu   sync.Mutex
	cacheDirs map[string]*statefile.Dir
	// cacheWarn reports a cache the command goes on without (see
	// cacheDir); common.backend sets it once (cacheWarnSet), nil drops
	// the warning.
	cacheWarn    func(error)
	cacheWarnSet sync.Once
}

func (k *kernelFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&k.backend, "iptables-backend", "auto", "iptables backend: auto (the one holding this mode's rules, else detected as kube-proxy's image does), legacy or nft")
	fs.StringVar(&k.stateDir, "state-dir", "/run/kubectl-svcproxy", "the cache of what nf_tables holds, per network namespace (empty: no cache); must be owned by the running user and not group- or world-writable")
	if k.ipvs {
		fs.StringSliceVar(&k.ipvsExclude, "ipvs-exclude-cidrs", nil, "ipvs mode: CIDRs whose IPVS virtual servers the tool never touches, as kube-proxy's flag")
		fs.BoolVar(&k.ipvsStrictARP, "ipvs-strict-arp", false, "ipvs mode: set arp_ignore=1 and arp_announce=2 so the node does not answer ARP for kube-ipvs0's addresses, as kube-proxy's flag")
	}
	if k.conntrack {
		// In a section of their own: their long names would otherwise
		// leave the other flags' help no room to wrap.
		inGroup(fs, conntrackGroup, k.addConntrackFlags)
	}
	if k.locking || k.lockFlags {
		k.addLockFlags(fs)
	}
}

// addLockFlags registers --lock-file and --lock-wait; a command that takes
// no lock says so in their help.
func (k *kernelFlags) addLockFlags(fs *pflag.FlagSet) {
	fileHelp := "the lock file that keeps two runs from interleaving; it and its directory must be owned by the running user and not group- or world-writable, and it may not be a symbolic link"
	waitHelp := "how long to wait for another run to finish (0: fail at once)"
	if !k.locking {
		const ignored = "plan takes no lock; accepted so one set of flags serves plan and apply"
		fileHelp, waitHelp = ignored, ignored
	}
	fs.StringVar(&k.lockFile, "lock-file", lock.DefaultPath, fileHelp)
	fs.DurationVar(&k.lockWait, "lock-wait", k.lockWait, waitHelp)
	if !k.locking {
		markNoEffect(fs, "lock-file", "it takes no lock")
		markNoEffect(fs, "lock-wait", "it takes no lock")
	}
}

// validate checks the flags the mode of p uses, before anything reads the
// kernel: nftables mode writes no iptables rules, and only ipvs mode has
// excluded CIDRs, which may come from p's config file.
func (k *kernelFlags) validate(p *ProxyFlags) error {
	mode := p.settings.mode
	if mode != ModeNFTables {
		if _, err := applyipt.ParseBackend(k.backend); err != nil {
			return err
		}
	}
	if mode == ModeIPVS {
		if _, err := k.excludeCIDRs(p.describe("ipvs-exclude-cidrs")); err != nil {
			return err
		}
	}
	if err := k.validateConntrack(p); err != nil {
		return err
	}
	k.liberalRender(p)
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
		if b, err = applyipt.DetectBackend(ctx, ex, own); err != nil {
			return nil, err
		}
	}
	if err := applyipt.LookTools(b); err != nil {
		return nil, err
	}
	client := &applyipt.Client{Exec: ex, Backend: b, WaitSeconds: 5, Ownership: own, Counters: ensureNFAcct, CacheWarn: k.cacheWarn}
	if b == applyipt.NFT {
		client.Generation = nftgen.Read // the cache in memory
		client.ReadNFT = readNFT
	}
	if k.stateDir != "" && b == applyipt.NFT {
		if cookie, err := nftgen.NetnsCookie(); err == nil {
			dir, err := k.cacheDir(cookie)
			if err != nil {
				return nil, err
			}
			client.CacheDir, client.Generation, client.NetnsCookie = dir, nftgen.Read, cookie
		}
	}
	return client, nil
}

// readNFT reads iptables-nft's tables of a family in this namespace over
// netlink, as iptables-nft-save would print them.
func readNFT(family nodetable.Family, tables []ipt.TableName) ([]byte, error) {
	conn, err := applynft.Open()
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return iptablesnft.Reader{Conn: conn}.Read(family, tables)
}

// cacheDir opens the cache directory of the network namespace with the
// given cookie, --state-dir/netns-<cookie>[/sub], creating what is
// missing (mode 0700). Every component is checked as statefile checks
// the tool's directories; one that fails is an error naming it and why,
// and the command stops (exit 2) rather than run with a cache or lock
// that another user could write or redirect.
//
// A directory that cannot be made or opened (a read-only or full
// filesystem, no permission) is no such danger: the cache in it only
// saves the next run a read of the kernel, so the command goes on
// without it, with a warning (cacheWarn), as it does when a cache file
// cannot be written. cacheDir then returns nil. The state directory
// holds nothing else that a run needs: the lock file (apply/lock) is
// opened on its own, and failing to take it stops the command.
func (k *kernelFlags) cacheDir(cookie uint64, sub ...string) (*statefile.Dir, error) {
	names := append([]string{fmt.Sprintf("netns-%d", cookie)}, sub...)
	key := strings.Join(names, "/")
	k.cacheMu.Lock()
	defer k.cacheMu.Unlock()
	if d := k.cacheDirs[key]; d != nil {
		return d, nil
	}
	d, err := openStateDir(k.stateDir)
	for _, name := range names {
		if err != nil {
			break
		}
		parent := d
		d, err = parent.Sub(name)
		parent.Close()
	}
	var unsafe *statefile.UnsafeError
	switch {
	case errors.As(err, &unsafe):
		return nil, fmt.Errorf("--state-dir: %w", err)
	case err != nil:
		if k.cacheWarn != nil {
			k.cacheWarn(err)
		}
		return nil, nil
	}
	if k.cacheDirs == nil {
		k.cacheDirs = map[string]*statefile.Dir{}
	}
	k.cacheDirs[key] = d
	return d, nil
}

// openStateDir opens --state-dir; tests replace it to fail as a full or
// read-only filesystem does.
var openStateDir = statefile.OpenDir

// excludeCIDRs parses --ipvs-exclude-cidrs; source names it for errors.
func (k *kernelFlags) excludeCIDRs(source string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range k.ipvsExclude {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("%s %q: not a CIDR: %w", source, s, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
