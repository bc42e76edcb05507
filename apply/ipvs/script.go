package ipvs

import (
	"fmt"
	"strings"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// Script returns what Apply would do as a shell script, for --dry-run:
// ip, ipset and ipvsadm commands and the helper chains' iptables-restore
// inputs, in Apply's order. Apply itself makes the same calls through
// netlink, one by one.
func (c *Client) Script(plans []*Plan) string {
	var b strings.Builder
	section := func(title string, ops []op) {
		if len(ops) == 0 {
			return
		}
		b.WriteString("# " + title + "\n")
		for _, o := range ops {
			b.WriteString(o.cmd + "\n")
		}
	}
	for _, p := range plans {
		section(fmt.Sprintf("ipvs (%s): add and change in place", p.Changes.Family), addOps(p))
	}
	var ipts []*applyipt.Plan
	for _, p := range plans {
		ipts = append(ipts, p.iptables)
	}
	for _, s := range c.IPTables.Steps(ipts) {
		fmt.Fprintf(&b, "# helper chains (%s)\n%s-%s-restore --noflush <<'EOF'\n%sEOF\n",
			s.Family, iptablesBin(s.Family), c.IPTables.Backend, s.Script)
	}
	for _, p := range plans {
		section(fmt.Sprintf("ipvs (%s): remove", p.Changes.Family), removeOps(p))
		for _, d := range p.Changes.Draining {
			fmt.Fprintf(&b, "# draining, left at weight 0: %s (%d active, %d inactive connections)\n",
				d.Service.RealServerLine(d.Dest), d.Conns.Active, d.Conns.Inactive)
		}
	}
	if b.Len() == 0 {
		return "# nothing to change (ipvs)\n"
	}
	return b.String()
}

func iptablesBin(f nodetable.Family) string {
	if f == nodetable.IPv6 {
		return "ip6tables"
	}
	return "iptables"
}
