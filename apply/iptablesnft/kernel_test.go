package iptablesnft_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptablesnft"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/goldencase"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// node is a lab namespace with a reader opened inside it.
type node struct {
	ns     netlab.NS
	reader iptablesnft.Reader
}

func newNode(t *testing.T) *node {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireTools(t, "iptables-nft-restore", "iptables-nft-save", "ip6tables-nft-restore", "ip6tables-nft-save")
	ns := netlab.New(t).Node()
	var conn *nftables.Conn
	if err := ns.Do(func() (err error) { conn, err = nftables.Open(); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := ns.EnsureNFAcct(); err != nil {
		t.Fatal(err)
	}
	return &node{ns: ns, reader: iptablesnft.Reader{Conn: conn}}
}

func tool(family nodetable.Family, what string) string {
	if family == nodetable.IPv6 {
		return "ip6tables-nft-" + what
	}
	return "iptables-nft-" + what
}

// load replaces the filter and nat tables of a family with text, as
// iptables-nft-restore writes them.
func (n *node) load(t *testing.T, family nodetable.Family, text string) {
	t.Helper()
	if out, err := n.ns.RunInput(context.Background(), []byte(text), tool(family, "restore")); err != nil {
		t.Fatalf("restore: %v: %s\n%s", err, out, text)
	}
}

// save is iptables-nft-save's text of the filter and nat tables, without
// its comment lines.
func (n *node) save(t *testing.T, family nodetable.Family) string {
	t.Helper()
	var b strings.Builder
	for _, table := range []string{"filter", "nat"} {
		out, err := n.ns.Run(context.Background(), tool(family, "save"), "-t", table)
		if err != nil {
			t.Fatalf("save: %v", err)
		}
		for _, line := range strings.SplitAfter(string(out), "\n") {
			if line != "" && !strings.HasPrefix(line, "#") {
				b.WriteString(line)
			}
		}
	}
	return b.String()
}

func (n *node) read(family nodetable.Family) (string, error) {
	out, err := n.reader.Read(family, []ipt.TableName{ipt.Filter, ipt.NAT})
	return string(out), err
}

// modes are the tool's modes whose iptables rules this package reads, each
// with its rendered rules for one family of a golden case. The ipvs mode's
// rules are left out: they match ipsets ("-m set"), which iptables-nft
// names by a kernel index that only the ipset subsystem resolves, so
// Read leaves them to iptables-nft-save (TestLeavesUnknownShapesToSave).
var modes = map[string]func(*nodetable.ServiceTable, render.Config) *ipt.Ruleset{
	"iptables": render.IPTables,
	"userspace": func(t *nodetable.ServiceTable, cfg render.Config) *ipt.Ruleset {
		return render.Userspace(t, cfg, render.UserspaceOptions{}).IPTables
	},
}

// TestReadsWhatIPTablesNFTSavePrints loads every golden scenario's rules
// of each iptables-based mode with iptables-nft-restore and reads them
// back both ways: the text must be iptables-nft-save's to the byte.
func TestReadsWhatIPTablesNFTSavePrints(t *testing.T) {
	n := newNode(t)
	for _, gc := range goldencase.Load(t, filepath.Join("..", "..", "testdata", "golden")) {
		tables := gc.Tables(t, gc.Input)
		for mode, renderMode := range modes {
			for _, family := range gc.Families() {
				rs := renderMode(tables.ForFamily(family), gc.Cfg.Config)
				if rs == nil {
					continue
				}
				t.Run(gc.Name+"/"+mode+"/"+string(family), func(t *testing.T) {
					text := string(rs.Bytes())
					n.load(t, family, text)
					got, err := n.read(family)
					if err != nil {
						t.Fatal(err)
					}
					if want := n.save(t, family); got != want {
						t.Errorf("read differs from iptables-nft-save:\n got: %s\nwant: %s", got, want)
					}
				})
			}
		}
	}
}
