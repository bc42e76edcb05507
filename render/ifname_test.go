package render_test

import (
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

// TestNFTablesInterfaceNameCannotAddToTheRule renders nftables mode with
// pod interface names that Config.Validate refuses, as if that check had
// been skipped: each name is one quoted word of its rules, or the ruleset
// fails Validate, which apply runs before it writes anything (issue 33).
func TestNFTablesInterfaceNameCannotAddToTheRule(t *testing.T) {
	table := synthetic.VariedTable(20, 2)
	for _, name := range []string{`br0" ip saddr 6.6.6.6 "`, `"`, "br0 ip saddr 6.6.6.6", "br\n0", "br0\x00"} {
		for _, mode := range []render.DetectLocalMode{render.LocalModeBridgeInterface, render.LocalModeInterfaceNamePrefix} {
			cfg := render.DefaultConfig()
			cfg.DetectLocalMode = mode
			cfg.BridgeInterface, cfg.InterfaceNamePrefix = name, name
			if cfg.Validate() == nil {
				t.Fatalf("%q validates", name)
			}
			want := name
			if mode == render.LocalModeInterfaceNamePrefix {
				want += "*"
			}
			rs := render.NFTables(table, cfg)
			err := rs.Validate()
			if !nft.Quotable(want) {
				if err == nil {
					t.Errorf("%s %q: the ruleset validates", mode, name)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s %q: %v", mode, name, err)
			}
			n := 0
			for _, c := range rs.Chains {
				for _, r := range c.Rules {
					if strings.Contains(string(r), "iifname") {
						n++
						if !strings.Contains(string(r), `iifname "`+want+`" `) && !strings.Contains(string(r), `iifname != "`+want+`" `) {
							t.Errorf("%s %q: rule %q", mode, name, r)
						}
					}
				}
			}
			if n == 0 {
				t.Errorf("%s %q: no rule matches the interface", mode, name)
			}
		}
	}
}
