package iptables

import (
	"bytes"
	"context"
	"fmt"

	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// DetectBackend picks the backend that holds the rules of the chains own
// names, and otherwise the backend the node's other components use, the
// way the iptables-wrapper script shipped in kube-proxy's image does:
//  0. the backend holding rules in the mode's own chains (see detectOwn):
//     a run after an apply finds what that apply wrote, whatever else
//     either backend holds; both holding them is an error;
//  1. the backend whose mangle table holds kubelet's KUBE-IPTABLES-HINT
//     or KUBE-KUBELET-CANARY chain;
//  2. otherwise the backend holding more rules;
//  3. otherwise nf_tables, the default of current distributions.
//
// A backend whose tools are missing is never chosen; if neither is
// installed, the error says so. It asks the kernel of the calling thread's
// network namespace (KernelProbe) and runs the tools through ex.
func DetectBackend(ctx context.Context, ex Execer, own *ipt.Ownership) (Backend, error) {
	return Detect(ctx, ex, KernelProbe{}, own)
}

// Probe is what Detect asks of the kernel before running any tool. Each
// answer must cost next to nothing and create no table.
type Probe interface {
	// NFTTables: does nf_tables hold an iptables-nft table (family ip or
	// ip6, named filter, nat, mangle, raw or security)?
	NFTTables() (bool, error)
	// NFTHint: is kubelet's hint chain in iptables-nft's mangle table?
	NFTHint() (bool, error)
	// LegacyTables: has any x_tables table been instantiated?
	LegacyTables() (bool, error)
	// LegacyInUse: does any x_tables table hold a rule or a chain of its
	// own (anything beyond its built-in chains' policies)?
	LegacyInUse() (bool, error)
	// NFTRules and LegacyRules name the first of chains, in family ip or
	// ip6, that holds a rule in iptables-nft's or x_tables' tables ("IPv4
	// nat KUBE-SERVICES"), or "" for none; neither creates a table.
	NFTRules(chains []TableChain) (string, error)
	LegacyRules(chains []TableChain) (string, error)
}

// Detect is DetectBackend with the kernel's answers from p. After the
// mode's own rules, it decides as the wrapper does, but reads only what
// the decision needs:
//   - a backend without tables has no hint and no rule, so it is not read
//     at all; only its tools are checked, with --version;
//   - when nf_tables holds no iptables table, x_tables is not read either:
//     the kernel's count of each table's entries says whether it holds
//     anything beyond its built-in chains (see detectSide.probe);
//   - otherwise x_tables is read whole, when it has tables: one
//     iptables-legacy-save per family copies each table in one system call
//     and gives both the hint and the rule count, and it lists only tables
//     that exist (-t would create the table it names);
//   - nf_tables' hint is a netlink lookup of the chain by name, made only
//     when legacy has a hint or rules (otherwise nf_tables wins anyway);
//   - nf_tables' rules are counted with iptables-nft-save, the one costly
//     read, only when both backends have tables, neither or both have the
//     hint, and legacy has rules. A node whose rules are in one backend
//     never pays it.
//
// When netlink cannot list nf_tables' tables, nf_tables is read with
// iptables-nft-save as before: -t mangle for the hint, then whole.
func Detect(ctx context.Context, ex Execer, p Probe, own *ipt.Ownership) (Backend, error) {
	exist, err := p.NFTTables()
	netlinkOK := err == nil
	if b, decided, err := detectOwn(ctx, ex, p, ownChains(own), netlinkOK && exist); decided {
		return b, err
	}
	legacy := detectSide{backend: Legacy}
	legacy.probe(ctx, ex, p, netlinkOK && !exist)
	nft := detectSide{backend: NFT}
	switch {
	case !netlinkOK:
		nft.readHint(ctx, ex)
	case exist && (legacy.hint || legacy.rules > 0):
		nft.checkTools(ctx, ex)
		if nft.err == nil {
			if nft.hint, err = p.NFTHint(); err != nil {
				nft.readHint(ctx, ex)
			}
		}
	default:
		nft.checkTools(ctx, ex)
	}
	switch {
	case nft.err != nil && legacy.err != nil:
		return "", fmt.Errorf("no usable iptables backend: %v; %v", nft.err, legacy.err)
	case nft.err != nil:
		return Legacy, nil
	case legacy.err != nil:
		return NFT, nil
	case nft.hint != legacy.hint:
		if legacy.hint {
			return Legacy, nil
		}
		return NFT, nil
	case legacy.rules == 0 || (netlinkOK && !exist):
		// nf_tables holds at least as many rules as legacy's none, or
		// legacy holds more than nf_tables' none.
		if legacy.rules > 0 {
			return Legacy, nil
		}
		return NFT, nil
	}
	nft.countRules(ctx, ex)
	if legacy.rules > nft.rules {
		return Legacy, nil
	}
	return NFT, nil
}

// detectSide is what Detect learned of one backend.
type detectSide struct {
	backend Backend
	hint    bool
	rules   int
	err     error // the backend's tools are missing or fail
}

func (d *detectSide) save(bin string) string { return bin + "-" + string(d.backend) + "-save" }

// probe learns what the decision needs of x_tables. With no table there,
// or (when nf_tables holds none) none that holds more than its built-in
// chains, it holds no hint and no rule, and only its tools are checked.
// When nf_tables holds no table, a legacy table with a chain or rule of
// its own decides for legacy without a dump: rules there outnumber
// nf_tables' none, or the chain is kubelet's hint (the one case where the
// wrapper would decide otherwise, a legacy table with only empty chains
// that are not the hint, is left to legacy). Otherwise x_tables is read
// whole.
func (d *detectSide) probe(ctx context.Context, ex Execer, p Probe, nftEmpty bool) {
	if exist, err := p.LegacyTables(); err != nil || !exist {
		d.checkTools(ctx, ex)
		return
	}
	if nftEmpty {
		if inUse, err := p.LegacyInUse(); err == nil {
			d.checkTools(ctx, ex)
			if inUse {
				d.rules = 1 // at least; enough against nf_tables' none
			}
			return
		}
	}
	d.readAll(ctx, ex)
}

// checkTools runs the save tool's --version.
func (d *detectSide) checkTools(ctx context.Context, ex Execer) {
	_, d.err = ex.Run(ctx, nil, d.save("iptables"), "--version")
}

// readAll reads every table of both families, for the hint and the rules.
func (d *detectSide) readAll(ctx context.Context, ex Execer) {
	for _, bin := range []string{"iptables", "ip6tables"} {
		all, err := ex.Run(ctx, nil, d.save(bin))
		if err != nil {
			d.err = err
			return
		}
		d.hint = d.hint || hasHint(mangleSection(all))
		d.rules += bytes.Count(all, []byte("\n-A "))
	}
}

// readHint reads the mangle table of both families.
func (d *detectSide) readHint(ctx context.Context, ex Execer) {
	for _, bin := range []string{"iptables", "ip6tables"} {
		mangle, err := ex.Run(ctx, nil, d.save(bin), "-t", "mangle")
		if err != nil {
			d.err = err
			return
		}
		d.hint = d.hint || hasHint(mangle)
	}
}

// countRules counts the rules of both families; a family whose read fails
// counts none, as the wrapper's grep does.
func (d *detectSide) countRules(ctx context.Context, ex Execer) {
	for _, bin := range []string{"iptables", "ip6tables"} {
		if all, err := ex.Run(ctx, nil, d.save(bin)); err == nil {
			d.rules += bytes.Count(all, []byte("\n-A "))
		}
	}
}

func hasHint(dump []byte) bool {
	for _, c := range hintChains {
		if bytes.Contains(dump, []byte("\n:"+c+" ")) {
			return true
		}
	}
	return false
}

// mangleSection is the *mangle table of an iptables-save dump.
func mangleSection(dump []byte) []byte {
	i := bytes.Index(dump, []byte("*mangle\n"))
	if i < 0 {
		return nil
	}
	s := dump[i:]
	if j := bytes.Index(s, []byte("\nCOMMIT")); j >= 0 {
		s = s[:j]
	}
	return s
}

// ParseBackend reads a --iptables-backend value ("auto" is "").
func ParseBackend(s string) (Backend, error) {
	switch s {
	case "", "auto":
		return "", nil
	case "legacy":
		return Legacy, nil
	case "nft", "nf_tables":
		return NFT, nil
	}
	return "", fmt.Errorf("--iptables-backend %q: must be auto, legacy or nft", s)
}
