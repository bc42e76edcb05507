package iptables

// xtablesNames are the tables iptables knows; iptables-nft keeps each as an
// nf_tables table of the same name in family ip or ip6.
var xtablesNames = map[string]bool{"filter": true, "nat": true, "mangle": true, "raw": true, "security": true}

// hintChains are the chains kubelet creates in the mangle table of the
// backend it uses.
var hintChains = []string{"KUBE-IPTABLES-HINT", "KUBE-KUBELET-CANARY"}

// KernelProbe answers Probe from the kernel of the calling thread's
// network namespace: netlink for nf_tables, /proc for x_tables. It runs no
// program, lists no rule and creates no table.
type KernelProbe struct{}
