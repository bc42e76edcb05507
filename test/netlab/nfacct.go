package netlab

import "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nfacct"

// EnsureNFAcct creates kube-proxy's nfacct counters in ns, as apply does
// before writing rules that count with them: tests that load rendered
// iptables rules with iptables-restore need them.
func (ns NS) EnsureNFAcct() error {
	return ns.ensureCounters(nfacct.Counters)
}

// NFAcctCounters is an iptables client's Counters hook for a client that
// works in ns: it creates the named counters there, as the CLI does in
// its own namespace.
func (ns NS) NFAcctCounters() func(names []string) error {
	return ns.ensureCounters
}

func (ns NS) ensureCounters(names []string) error {
	return ns.Do(func() error {
		for _, name := range names {
			if err := nfacct.Ensure(name); err != nil {
				return err
			}
		}
		return nil
	})
}
