package iptables

import (
	"fmt"
	"slices"
	"strings"
)

// nfacctName is how a rule names an nfacct counter, in iptables-save's
// spelling (two spaces: the option is printed with a trailing one).
const nfacctName = "-m nfacct --nfacct-name "

// counterNames returns the nfacct counters that the desired rules of
// plans name, sorted.
func counterNames(plans []*Plan) []string {
	seen := map[string]bool{}
	for _, p := range plans {
		for _, t := range p.Desired.Tables {
			for _, c := range t.Chains {
				for _, r := range c.Rules {
					if _, rest, ok := strings.Cut(string(r), nfacctName); ok {
						if f := strings.Fields(rest); len(f) > 0 {
							seen[f[0]] = true
						}
					}
				}
			}
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ensureCounters creates the counters the plans' rules name, through
// Counters, before anything is written.
func (c *Client) ensureCounters(plans []*Plan) error {
	names := counterNames(plans)
	if len(names) == 0 || c.Counters == nil {
		return nil
	}
	if err := c.Counters(names); err != nil {
		return fmt.Errorf("create the nfacct counters the rules count with (%s): %w", strings.Join(names, ", "), err)
	}
	return nil
}
