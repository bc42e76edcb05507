package netlab

import "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nfacct"

// EnsureNFAcct creates kube-proxy's nfacct counters in ns, as apply does
// before writing rules that count with them: tests that load rendered
// iptables rules with iptables-restore need them.
func (ns NS) EnsureNFAcct() error {
	return ns.Do(func() error {
		for _, name := range nfacct.Counters {
			if err := nfacct.Ensure(name); err != nil {
				return err
			}
		}
		return nil
	})
}
