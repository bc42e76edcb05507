package iptables

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// NFTTables reports whether nf_tables holds a table of family ip or ip6
// named as an iptables table: without one, iptables-nft has no rule and
// no chain. It lists table names only.
func (KernelProbe) NFTTables() (bool, error) {
	req := nl.NewNetlinkRequest(unix.NFNL_SUBSYS_NFTABLES<<8|unix.NFT_MSG_GETTABLE, unix.NLM_F_DUMP)
	req.AddData(&nl.Nfgenmsg{NfgenFamily: unix.AF_UNSPEC, Version: nl.NFNETLINK_V0})
	msgs, err := req.Execute(unix.NETLINK_NETFILTER, 0)
	if err != nil {
		return false, fmt.Errorf("list nf_tables tables: %w", err)
	}
	for _, m := range msgs {
		if len(m) < 4 || (m[0] != unix.AF_INET && m[0] != unix.AF_INET6) {
			continue
		}
		attrs, err := nl.ParseRouteAttr(m[4:])
		if err != nil {
			return false, fmt.Errorf("list nf_tables tables: %w", err)
		}
		for _, a := range attrs {
			if a.Attr.Type == unix.NFTA_TABLE_NAME && xtablesNames[string(bytes.TrimRight(a.Value, "\x00"))] {
				return true, nil
			}
		}
	}
	return false, nil
}

// NFTHint reports whether kubelet's hint chain is in iptables-nft's mangle
// table, of family ip or ip6: one lookup of a chain by name each.
func (KernelProbe) NFTHint() (bool, error) {
	for _, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		for _, chain := range hintChains {
			req := nl.NewNetlinkRequest(unix.NFNL_SUBSYS_NFTABLES<<8|unix.NFT_MSG_GETCHAIN, 0)
			req.AddData(&nl.Nfgenmsg{NfgenFamily: family, Version: nl.NFNETLINK_V0})
			req.AddData(nl.NewRtAttr(unix.NFTA_CHAIN_TABLE, nl.ZeroTerminated("mangle")))
			req.AddData(nl.NewRtAttr(unix.NFTA_CHAIN_NAME, nl.ZeroTerminated(chain)))
			_, err := req.Execute(unix.NETLINK_NETFILTER, 0)
			switch {
			case err == nil:
				return true, nil
			case !errors.Is(err, unix.ENOENT):
				return false, fmt.Errorf("look up nf_tables chain %s: %w", chain, err)
			}
		}
	}
	return false, nil
}

// LegacyTables reports whether any x_tables table has been instantiated in
// the calling thread's network namespace, without instantiating one: the
// kernel lists them in ip_tables_names and ip6_tables_names. A file that
// is missing (the module is not loaded) lists none.
func (KernelProbe) LegacyTables() (bool, error) {
	for _, f := range []string{"ip_tables_names", "ip6_tables_names"} {
		out, err := os.ReadFile("/proc/thread-self/net/" + f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return false, err
		}
		if len(bytes.TrimSpace(out)) > 0 {
			return true, nil
		}
	}
	return false, nil
}
