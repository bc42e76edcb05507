package iptables

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// fakeTools answers iptables-*-save with canned dumps, and the kernel probe
// with canned answers; it records the commands run.
type fakeTools struct {
	dumps     map[string]string // "iptables-legacy-save -t mangle" -> output
	missing   string            // a backend whose tools are not installed
	legacy    bool              // x_tables lists tables
	nftTables bool              // nf_tables holds an ip/ip6 filter, nat, ... table
	nftHint   bool              // the hint chain is in nf_tables' mangle
	noNetlink bool              // netlink fails
	noGetInfo bool              // x_tables' summary cannot be read
	nftOwn    string            // where nf_tables holds the mode's rules
	legacyOwn string            // where x_tables holds them
	ran       *[]string         // the commands run, and the rule probes made
}

func (f fakeTools) Run(_ context.Context, _ []byte, name string, args ...string) ([]byte, error) {
	line := strings.Join(append([]string{name}, args...), " ")
	if f.ran != nil {
		*f.ran = append(*f.ran, line)
	}
	if f.missing != "" && strings.Contains(name, "-"+f.missing+"-") {
		return nil, errors.New(name + " not found")
	}
	return []byte(f.dumps[line]), nil
}

func (f fakeTools) NFTTables() (bool, error) {
	if f.noNetlink {
		return false, errors.New("netlink: operation not supported")
	}
	return f.nftTables, nil
}

func (f fakeTools) NFTHint() (bool, error) {
	if f.noNetlink {
		return false, errors.New("netlink: operation not supported")
	}
	return f.nftHint, nil
}

func (f fakeTools) LegacyTables() (bool, error) { return f.legacy, nil }

func (f fakeTools) NFTRules(chains []TableChain) (string, error) {
	if f.ran != nil {
		*f.ran = append(*f.ran, "probe nft rules")
	}
	if f.noNetlink {
		return "", errors.New("netlink: operation not supported")
	}
	if !slices.Equal(chains, testOwnChains) {
		return "", errors.New("probed the wrong chains")
	}
	return f.nftOwn, nil
}

func (f fakeTools) LegacyRules(chains []TableChain) (string, error) {
	if f.ran != nil {
		*f.ran = append(*f.ran, "probe legacy rules")
	}
	if !f.legacy && f.legacyOwn != "" {
		panic("the mode's rules in legacy, which lists no tables")
	}
	if !slices.Equal(chains, testOwnChains) {
		return "", errors.New("probed the wrong chains")
	}
	return f.legacyOwn, nil
}

// testOwn is a mode's ownership: of its chains, kubelet's shared one and
// those older kubelets create do not mark where the mode's rules are.
var (
	testOwn = &ipt.Ownership{
		Chains: map[ipt.TableName][]string{ipt.NAT: {"KUBE-SERVICES", "KUBE-MARK-MASQ"}, ipt.Filter: {"KUBE-FORWARD", "KUBE-FIREWALL"}},
		Shared: []string{"KUBE-FIREWALL"},
	}
	testOwnChains = []TableChain{{ipt.Filter, "KUBE-FORWARD"}, {ipt.NAT, "KUBE-SERVICES"}}
)

// LegacyInUse answers as the kernel would for the canned legacy dump: a
// chain of its own or a rule is an entry beyond the built-in chains.
func (f fakeTools) LegacyInUse() (bool, error) {
	if f.noGetInfo {
		return false, errors.New("getsockopt: operation not permitted")
	}
	d := f.dumps["iptables-legacy-save"]
	return f.legacy && (strings.Contains(d, "\n:") || strings.Contains(d, "\n-A ")), nil
}

const (
	hintDump  = "*mangle\n:KUBE-IPTABLES-HINT - [0:0]\nCOMMIT\n"
	rulesDump = "*nat\n:X - [0:0]\n-A X -j ACCEPT\n-A X -j ACCEPT\nCOMMIT\n"
	oneRule   = "*nat\n:X - [0:0]\n-A X -j ACCEPT\nCOMMIT\n"
)

func TestDetectBackend(t *testing.T) {
	cases := []struct {
		name string
		f    fakeTools
		want Backend
	}{
		{"nothing anywhere", fakeTools{}, NFT},
		{"kubelet's hint in legacy", fakeTools{legacy: true, nftTables: true, dumps: map[string]string{"iptables-legacy-save": hintDump}}, Legacy},
		{"kubelet's hint in legacy, nft holds no table", fakeTools{legacy: true, dumps: map[string]string{"iptables-legacy-save": hintDump}}, Legacy},
		{"kubelet's hint in nft", fakeTools{legacy: true, nftTables: true, nftHint: true, dumps: map[string]string{"iptables-legacy-save": rulesDump}}, NFT},
		{"kubelet's hint in both, more rules in legacy", fakeTools{legacy: true, nftTables: true, nftHint: true, dumps: map[string]string{"iptables-legacy-save": hintDump + rulesDump, "iptables-nft-save": oneRule}}, Legacy},
		{"kubelet's hint in both, more rules in nft", fakeTools{legacy: true, nftTables: true, nftHint: true, dumps: map[string]string{"iptables-legacy-save": hintDump + oneRule, "iptables-nft-save": rulesDump}}, NFT},
		{"a hint-named chain outside mangle is no hint", fakeTools{legacy: true, nftTables: true, dumps: map[string]string{"iptables-legacy-save": "*filter\n:KUBE-IPTABLES-HINT - [0:0]\nCOMMIT\n"}}, NFT},
		{"more rules in legacy", fakeTools{legacy: true, dumps: map[string]string{"iptables-legacy-save": rulesDump}}, Legacy},
		{"more rules in legacy, both have tables", fakeTools{legacy: true, nftTables: true, dumps: map[string]string{"iptables-legacy-save": rulesDump, "iptables-nft-save": oneRule}}, Legacy},
		{"as many rules in both", fakeTools{legacy: true, nftTables: true, dumps: map[string]string{"iptables-legacy-save": rulesDump, "iptables-nft-save": rulesDump}}, NFT},
		{"legacy tables without rules", fakeTools{legacy: true, nftTables: true}, NFT},
		{"legacy tables without rules, no nft tables", fakeTools{legacy: true}, NFT},
		{"more rules in legacy, its summary unreadable", fakeTools{legacy: true, noGetInfo: true, dumps: map[string]string{"iptables-legacy-save": rulesDump}}, Legacy},
		{"legacy rules but no legacy tables listed", fakeTools{dumps: map[string]string{"iptables-legacy-save": rulesDump}}, NFT},
		{"only legacy installed", fakeTools{missing: "nft"}, Legacy},
		{"only legacy installed, nft tables", fakeTools{missing: "nft", nftTables: true, legacy: true, dumps: map[string]string{"iptables-legacy-save": rulesDump}}, Legacy},
		{"only nft installed", fakeTools{missing: "legacy", legacy: true}, NFT},
		{"no netlink: the hint read with -t mangle", fakeTools{noNetlink: true, legacy: true, dumps: map[string]string{"iptables-legacy-save": rulesDump, "iptables-nft-save -t mangle": hintDump}}, NFT},
		{"no netlink: more rules in legacy", fakeTools{noNetlink: true, legacy: true, dumps: map[string]string{"iptables-legacy-save": rulesDump, "iptables-nft-save": oneRule}}, Legacy},
		{"no netlink, no nft tools", fakeTools{noNetlink: true, missing: "nft"}, Legacy},
		{"the mode's rules in nft, more rules in legacy", fakeTools{legacy: true, nftTables: true, nftOwn: "IPv4 nat KUBE-SERVICES", dumps: map[string]string{"iptables-legacy-save": rulesDump, "iptables-nft-save": oneRule}}, NFT},
		{"the mode's rules in nft, kubelet's hint in legacy", fakeTools{legacy: true, nftTables: true, nftOwn: "IPv4 nat KUBE-SERVICES", dumps: map[string]string{"iptables-legacy-save": hintDump}}, NFT},
		{"the mode's rules in legacy, kubelet's hint in nft", fakeTools{legacy: true, nftTables: true, nftHint: true, legacyOwn: "IPv4 nat KUBE-SERVICES", dumps: map[string]string{"iptables-legacy-save": rulesDump}}, Legacy},
		{"the mode's rules in legacy, more rules in nft", fakeTools{legacy: true, nftTables: true, legacyOwn: "IPv4 nat KUBE-SERVICES", dumps: map[string]string{"iptables-legacy-save": oneRule, "iptables-nft-save": rulesDump}}, Legacy},
		{"no netlink: the heuristics, as before", fakeTools{noNetlink: true, legacy: true, nftOwn: "IPv4 nat KUBE-SERVICES", dumps: map[string]string{"iptables-legacy-save": rulesDump, "iptables-nft-save": oneRule}}, Legacy},
	}
	for _, tc := range cases {
		got, err := Detect(context.Background(), tc.f, tc.f, testOwn)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

func TestDetectBackendNeitherInstalled(t *testing.T) {
	f := fakeTools{dumps: map[string]string{}}
	both := bothMissing{f}
	if b, err := Detect(context.Background(), both, f, testOwn); err == nil {
		t.Fatalf("got %q with no tools installed, want an error", b)
	}
}

// TestDetectTheModesRulesInBothBackends: two copies are an error that
// names where each is and how to remove one; and a backend that holds the
// mode's rules but whose tools fail is not traded for the other.
func TestDetectTheModesRulesInBothBackends(t *testing.T) {
	f := fakeTools{legacy: true, nftTables: true, nftOwn: "IPv4 nat KUBE-SERVICES", legacyOwn: "IPv6 filter KUBE-FORWARD"}
	b, err := Detect(context.Background(), f, f, testOwn)
	var both *BothBackendsError
	if !errors.As(err, &both) {
		t.Fatalf("got %q, %v; want a BothBackendsError", b, err)
	}
	for _, want := range []string{"iptables-legacy (IPv6 filter KUBE-FORWARD)", "iptables-nft (IPv4 nat KUBE-SERVICES)", "`kubectl svcproxy reset --iptables-backend=legacy`", "`kubectl svcproxy reset --iptables-backend=nft`", "--mode"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}

	f = fakeTools{legacy: true, nftTables: true, nftOwn: "IPv4 nat KUBE-SERVICES", missing: "nft"}
	if b, err := Detect(context.Background(), f, f, testOwn); err == nil || !strings.Contains(err.Error(), "nft backend holds this mode's rules") {
		t.Fatalf("the mode's rules in nft, whose tools are missing: got %q, %v; want an error", b, err)
	}
}

type bothMissing struct{ fakeTools }

func (bothMissing) Run(_ context.Context, _ []byte, name string, _ ...string) ([]byte, error) {
	return nil, errors.New(name + " not found")
}

// TestDetectReadsOnlyWhatItNeeds: the costly iptables-nft-save runs only
// when both backends hold tables and the rule counts decide; x_tables is
// never asked for a table by name, which would create it.
func TestDetectReadsOnlyWhatItNeeds(t *testing.T) {
	cases := []struct {
		name     string
		f        fakeTools
		wantRuns []string
	}{
		{"rules only in nft", fakeTools{nftTables: true, nftHint: true},
			[]string{"probe nft rules", "iptables-legacy-save --version", "iptables-nft-save --version"}},
		{"rules only in legacy", fakeTools{legacy: true, dumps: map[string]string{"iptables-legacy-save": hintDump + rulesDump}},
			[]string{"iptables-legacy-save --version", "iptables-nft-save --version"}},
		{"rules only in legacy, its summary unreadable", fakeTools{legacy: true, noGetInfo: true, dumps: map[string]string{"iptables-legacy-save": rulesDump}},
			[]string{"iptables-legacy-save", "ip6tables-legacy-save", "iptables-nft-save --version"}},
		{"legacy loaded but empty, no nft tables", fakeTools{legacy: true},
			[]string{"iptables-legacy-save --version", "iptables-nft-save --version"}},
		{"legacy loaded but empty", fakeTools{legacy: true, nftTables: true},
			[]string{"probe nft rules", "probe legacy rules", "iptables-legacy-save", "ip6tables-legacy-save", "iptables-nft-save --version"}},
		{"the hints decide", fakeTools{legacy: true, nftTables: true, nftHint: true, dumps: map[string]string{"iptables-legacy-save": rulesDump}},
			[]string{"probe nft rules", "probe legacy rules", "iptables-legacy-save", "ip6tables-legacy-save", "iptables-nft-save --version"}},
		{"the counts decide", fakeTools{legacy: true, nftTables: true, dumps: map[string]string{"iptables-legacy-save": rulesDump}},
			[]string{"probe nft rules", "probe legacy rules", "iptables-legacy-save", "ip6tables-legacy-save", "iptables-nft-save --version", "iptables-nft-save", "ip6tables-nft-save"}},
		{"the mode's rules in nft, foreign rules in legacy", fakeTools{legacy: true, nftTables: true, nftOwn: "IPv4 nat KUBE-SERVICES", dumps: map[string]string{"iptables-legacy-save": rulesDump}},
			[]string{"probe nft rules", "probe legacy rules", "iptables-nft-save --version"}},
		{"the mode's rules in nft, no legacy tables", fakeTools{nftTables: true, nftOwn: "IPv4 nat KUBE-SERVICES"},
			[]string{"probe nft rules", "iptables-nft-save --version"}},
		{"the mode's rules in legacy, nft holds others", fakeTools{legacy: true, nftTables: true, legacyOwn: "IPv6 filter KUBE-FORWARD", dumps: map[string]string{"iptables-nft-save": rulesDump}},
			[]string{"probe nft rules", "probe legacy rules", "iptables-legacy-save --version"}},
	}
	for _, tc := range cases {
		var ran []string
		tc.f.ran = &ran
		if _, err := Detect(context.Background(), tc.f, tc.f, testOwn); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !slices.Equal(ran, tc.wantRuns) {
			t.Errorf("%s: ran %q, want %q", tc.name, ran, tc.wantRuns)
		}
	}
}
